import type { Clock, Duration } from '@sluice/core'
import { rangeError, readClock, readOptions, typeError } from '@sluice/core/validation'
import type { LeaseOptions } from '@sluice/keyed'
import {
  type OnError,
  REMOTE_STORE_OPTIONS,
  type RemoteStoreOptions,
  type RemoteStoreSettings,
  readRemoteStoreOptions,
} from '@sluice/keyed/store'
import { type RedisClient, type SendCommand, toSendCommand } from './client'
import { disconnectedError, isStandaloneIoRedis, type RedisStoreError } from './errors'

export const FACTORY = 'redisStore'

export type { OnError }

/**
 * Options of {@link redisStore}: the options every remote store takes (`timeout`,
 * `onError`, `onFailure`, `onRecovery`, `leaseTtl`, `probeInterval`, `local`, read by
 * `@sluice/keyed`'s one reader), and Redis's own. Unknown names are refused (with a "did
 * you mean"), and every value is checked when the store is made. An outage is reported
 * by `onFailure` (default: a `SluiceWarning` with code `ERR_SLUICE_REDIS_DOWN`), its end
 * by `onRecovery` (`ERR_SLUICE_REDIS_RECOVERED`); while Redis fails, a background probe
 * (a command routed by a key that failed) checks every `probeInterval` whether it is back,
 * with or without traffic.
 *
 * @example
 * ```ts
 * const options: RedisStoreOptions = { client: new Redis(), timeout: '250ms', onError: 'local' }
 * ```
 */
export interface RedisStoreOptions extends RemoteStoreOptions<RedisStoreError> {
  /** An ioredis client (standalone or Cluster), a node-redis v4+ client, or a `sendCommand` function. */
  client: RedisClient
  /** Prepended to every key. Must not contain `{` or `}` (they would break the hash tag). Default `'sluice:'`. */
  prefix?: string
  /**
   * Longest wait for one Redis call, counted from the call (time queued in the client
   * included) to its answer; a call still unanswered then counts as failed. Default `'500ms'`.
   */
  timeout?: Duration
  /**
   * While Redis fails: `'deny'` refuses every request, `'allow'` admits every request
   * without counting, `'local'` counts in an in-memory store of this process. Default
   * `'local'`. With `'local'` and N processes, a client key may be admitted up to
   * (N + 1) × limit in a window that overlaps an outage: see the README.
   */
  onError?: OnError
  /**
   * For tests only: the time the scripts decide on, read at each call and sent with it,
   * so a test can move time (a `ManualClock`) and check exact numbers. Keys then get no
   * expiry (Redis's expiry runs on its own clock). Default: Redis's own clock (`TIME`),
   * which is what production must use: application servers' clocks disagree.
   */
  clock?: Clock
  /**
   * Quota leases (`withLeases` of `@sluice/keyed`): each process takes a block of permits
   * (`share` of the capacity, default 0.001) in one call and decides locally until it is
   * spent or `ttl` (default `'1s'`) ends. Admits at most N × block beyond the limit with N
   * processes (0 for a fixed window): see the README. Default: off, every decision exact.
   */
  lease?: LeaseOptions
}

const OPTIONS = ['client', 'prefix', 'clock', 'lease', ...REMOTE_STORE_OPTIONS]

/**
 * Names that mean "connect for me" (an address, or another library's client option): the
 * store never opens a connection of its own, so each says to pass a client.
 */
const CONNECT_YOURSELF =
  'the store takes a client, not an address: redisStore({ client: new Redis(url) }) with ioredis, or a connected node-redis client'
const HINTS: Readonly<Record<string, string>> = {
  url: CONNECT_YOURSELF,
  host: CONNECT_YOURSELF,
  port: CONNECT_YOURSELF,
  db: CONNECT_YOURSELF,
  redis: 'use "client"',
  storeClient: 'use "client"',
  sendCommand: 'use "client": it takes a sendCommand(args, key) function too',
}

const MAX_PREFIX_LENGTH = 256

/** The validated options: the remote-store settings, and Redis's own. */
export interface StoreSettings extends RemoteStoreSettings<RedisStoreError> {
  readonly send: SendCommand
  readonly client: RedisClient
  readonly prefix: string
  readonly clock: Clock | undefined
  readonly lease: LeaseOptions | undefined
}

/**
 * Checks every option of {@link redisStore} (issue 11: a misspelt `onerror` used to leave
 * the default in force): unknown names, types and ranges, all at construction.
 */
export function readStoreSettings(options: RedisStoreOptions): StoreSettings {
  readOptions(FACTORY, options, OPTIONS, HINTS)
  const send = explainDisconnected(toSendCommand(options.client), options.client)
  return {
    ...readRemoteStoreOptions(FACTORY, options, { timeout: '500ms' }),
    send,
    client: options.client,
    prefix: readPrefix(options.prefix),
    clock: options.clock === undefined ? undefined : readClock(FACTORY, 'clock', options.clock),
    lease: options.lease,
  }
}

/**
 * Rewrites the failure of a call that an unconnected ioredis client refused, so that what
 * the store reports (`onFailure`, `ERR_SLUICE_REDIS_DOWN`) names the address and the cause.
 */
function explainDisconnected(send: SendCommand, client: RedisClient): SendCommand {
  if (!isStandaloneIoRedis(client)) return send
  return (args, key) =>
    send(args, key).catch((error: unknown) => {
      throw disconnectedError(error, client) ?? error
    })
}

function readPrefix(value: unknown): string {
  if (value === undefined) return 'sluice:'
  if (typeof value !== 'string') throw typeError(FACTORY, 'prefix', 'must be a string', value)
  if (/[{}]/.test(value)) {
    throw rangeError(
      FACTORY,
      'prefix',
      'must not contain "{" or "}" (it would break the Cluster hash tag)',
      value,
    )
  }
  if (value.length > MAX_PREFIX_LENGTH) {
    throw rangeError(FACTORY, 'prefix', `must be at most ${MAX_PREFIX_LENGTH} characters`, value)
  }
  return value
}
