import type { Clock, Duration } from '@sluice/core'
import {
  describe,
  rangeError,
  readClock,
  readFunction,
  readOneOf,
  readOptions,
  readPositiveDuration,
  typeError,
} from '@sluice/core/validation'
import type { LeaseOptions, Store } from '@sluice/keyed'
import { warnIfBareMilliseconds } from '@sluice/keyed/store'
import { type RedisClient, type SendCommand, toSendCommand } from './client'
import { disconnectedError, isStandaloneIoRedis, type RedisStoreError } from './errors'

export const FACTORY = 'redisStore'

/**
 * What the store answers while Redis is unreachable: `'deny'` fails closed, `'allow'`
 * fails open, `'local'` keeps limiting per process.
 *
 * @example
 * ```ts
 * const onError: OnError = process.env.NODE_ENV === 'production' ? 'local' : 'deny'
 * ```
 */
export type OnError = 'deny' | 'allow' | 'local'

/**
 * Options of {@link redisStore}. Unknown names are refused (with a "did you mean"), and
 * every value is checked when the store is made.
 *
 * @example
 * ```ts
 * const options: RedisStoreOptions = { client: new Redis(), timeout: '250ms', onError: 'local' }
 * ```
 */
export interface RedisStoreOptions {
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
   * Called once when Redis starts failing (an outage, not once per request). Default: a
   * `SluiceWarning` with code `ERR_SLUICE_REDIS_DOWN` (`process.emitWarning`).
   */
  onFailure?: (error: RedisStoreError) => void
  /**
   * Called once when Redis answers again after an outage. Default: a `SluiceWarning` with
   * code `ERR_SLUICE_REDIS_RECOVERED`.
   */
  onRecovery?: () => void
  /**
   * Longest a concurrency slot is held: a slot whose release never reaches Redis (the
   * process crashed, or lost its connection without closing it) is freed this long
   * after it was taken. Make it longer than your slowest request: a request running
   * longer loses its slot to the next caller. Default `'1m'`.
   */
  leaseTtl?: Duration
  /**
   * While Redis fails, how often a background probe (a command routed by a key that
   * failed) checks whether it is back, with or without traffic. Default `'1s'`.
   */
  probeInterval?: Duration
  /** The store that answers with `onError: 'local'`. Default: `memoryStore()`. */
  local?: Store
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

const ON_ERROR: readonly OnError[] = ['deny', 'allow', 'local']

const OPTIONS = [
  'client',
  'prefix',
  'timeout',
  'onError',
  'onFailure',
  'onRecovery',
  'leaseTtl',
  'probeInterval',
  'local',
  'clock',
  'lease',
]

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

/** setTimeout fires at once for anything longer (with a TimeoutOverflowWarning). */
const MAX_TIMER_MS = 2 ** 31 - 1
const MAX_PREFIX_LENGTH = 256

/** The validated options, durations in milliseconds. */
export interface StoreSettings {
  readonly send: SendCommand
  readonly client: RedisClient
  readonly prefix: string
  readonly timeoutMs: number
  readonly onError: OnError
  readonly onFailure: ((error: RedisStoreError) => void) | undefined
  readonly onRecovery: (() => void) | undefined
  readonly leaseTtlMs: number
  readonly probeMs: number
  readonly local: Store | undefined
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
  const timeoutMs = readTimer('timeout', options.timeout, '500ms')
  const leaseTtlMs = readTimer('leaseTtl', options.leaseTtl, '1m')
  if (leaseTtlMs <= timeoutMs) {
    throw rangeError(
      FACTORY,
      'leaseTtl',
      `must be longer than "timeout" (${timeoutMs} ms), or a slot could expire before its take is answered`,
      options.leaseTtl ?? '1m',
    )
  }
  const onError = readOneOf<OnError>(FACTORY, 'onError', options.onError, ON_ERROR, 'local')
  if (options.local !== undefined && onError !== 'local') {
    throw new TypeError(
      `${FACTORY}: "local" is only used with onError 'local', got onError ${describe(onError)}`,
    )
  }
  if (options.local !== undefined && !isStore(options.local)) {
    throw typeError(
      FACTORY,
      'local',
      'must be a store (take, refund, release, get, reset, resetAll)',
      options.local,
    )
  }
  return {
    send,
    client: options.client,
    prefix: readPrefix(options.prefix),
    timeoutMs,
    onError,
    onFailure: readFunction(FACTORY, 'onFailure', options.onFailure),
    onRecovery: readFunction(FACTORY, 'onRecovery', options.onRecovery),
    leaseTtlMs,
    probeMs: readTimer('probeInterval', options.probeInterval, '1s'),
    local: options.local,
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

function readTimer(option: string, value: unknown, fallback: Duration): number {
  warnIfBareMilliseconds(FACTORY, option, value)
  const ms = readPositiveDuration(FACTORY, option, value, fallback)
  if (ms > MAX_TIMER_MS) {
    throw rangeError(FACTORY, option, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days)`, value)
  }
  return ms
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

function isStore(value: unknown): value is Store {
  if (typeof value !== 'object' || value === null) return false
  const store = value as Record<string, unknown>
  return ['take', 'refund', 'release', 'get', 'reset', 'resetAll'].every(
    (method) => typeof store[method] === 'function',
  )
}
