import type { Duration } from '@sluice/core'
import {
  describe,
  rangeError,
  readFunction,
  readOneOf,
  readPositiveDuration,
} from '@sluice/core/validation'
import { memoryStore } from './memory-store'
import { readStore } from './read-store'
import type { Store } from './store'
import { warnIfBareMilliseconds } from './warnings'

/**
 * What a remote store answers while its backend cannot be reached: `'deny'` fails closed,
 * `'allow'` fails open, `'local'` keeps limiting in this process.
 *
 * @example
 * ```ts
 * const onError: OnError = process.env.NODE_ENV === 'production' ? 'local' : 'deny'
 * ```
 */
export type OnError = 'deny' | 'allow' | 'local'

/**
 * The options every store whose state lives elsewhere (Redis, Durable Objects) takes about
 * reaching it, read by {@link readRemoteStoreOptions}. A store's options extend these;
 * `E` is the error the store hands to `onFailure`.
 *
 * @example
 * ```ts
 * interface MyStoreOptions extends RemoteStoreOptions<MyStoreError> {
 *   url: string
 * }
 * ```
 */
export interface RemoteStoreOptions<E extends Error = Error> {
  /**
   * Longest wait for one call, from the call to its answer; a call still unanswered then
   * counts as failed. At most 2^31 − 1 ms (setTimeout's range). Default: the store's.
   */
  timeout?: Duration
  /**
   * While the backend fails: `'deny'` refuses every request, `'allow'` admits every request
   * uncounted, `'local'` counts in a store of this process (`local`). Default `'local'`.
   */
  onError?: OnError
  /** Called once when the backend starts failing (an outage, not once per request). Default: a `SluiceWarning`. */
  onFailure?: (error: E) => void
  /** Called once when it answers again after an outage. Default: a `SluiceWarning`. */
  onRecovery?: () => void
  /**
   * Longest a concurrency slot is held: a slot whose release never arrives (its holder
   * died) is freed this long after it was taken. Longer than `timeout`, or a slot could
   * expire before its take is answered; make it longer than your slowest request.
   * Default `'1m'`.
   */
  leaseTtl?: Duration
  /** While the backend fails, how often it is tried again. Default `'1s'`. */
  probeInterval?: Duration
  /** The store that answers with `onError: 'local'`. Default: `memoryStore()`. */
  local?: Store
}

/** The names of {@link RemoteStoreOptions}, for a store's list of known options. */
export const REMOTE_STORE_OPTIONS = [
  'timeout',
  'onError',
  'onFailure',
  'onRecovery',
  'leaseTtl',
  'probeInterval',
  'local',
] as const

/** {@link RemoteStoreOptions} as read: durations in milliseconds, `local` made. */
export interface RemoteStoreSettings<E extends Error = Error> {
  readonly timeoutMs: number
  readonly onError: OnError
  /** Undefined: the store reports with a warning. */
  readonly onFailure: ((error: E) => void) | undefined
  readonly onRecovery: (() => void) | undefined
  readonly leaseTtlMs: number
  readonly probeMs: number
  /** The store that answers while the backend fails with `onError: 'local'`; undefined otherwise. */
  readonly local: Store | undefined
}

/** setTimeout fires at once for anything longer (Node warns TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1

const ON_ERROR: readonly OnError[] = ['deny', 'allow', 'local']

/**
 * Reads the {@link RemoteStoreOptions} of a store's options, all checked at construction:
 * durations positive and within setTimeout's range (a bare number under 1000 warns
 * `ERR_SLUICE_DURATION_IN_MS`: milliseconds, perhaps meant as seconds), `leaseTtl` longer than `timeout`,
 * `onError` one of three, `local` a store and only with `onError: 'local'`, the hooks
 * functions. Unknown names are the store's to refuse (`readOptions` with
 * {@link REMOTE_STORE_OPTIONS} and its own names), before this runs.
 *
 * @example
 * ```ts
 * readOptions('myStore', options, ['url', ...REMOTE_STORE_OPTIONS])
 * const { timeoutMs, onError, local } = readRemoteStoreOptions('myStore', options, { timeout: '500ms' })
 * // myStore({ url, timeout: '30d' }) → RangeError: myStore: "timeout" must be at most 2147483647 ms (about 24.8 days), got "30d"
 * ```
 */
export function readRemoteStoreOptions<E extends Error>(
  factory: string,
  options: RemoteStoreOptions<E>,
  defaults: { readonly timeout: Duration },
): RemoteStoreSettings<E> {
  const timeoutMs = readTimer(factory, 'timeout', options.timeout, defaults.timeout)
  const leaseTtlMs = readLeaseTtl(factory, options.leaseTtl)
  if (leaseTtlMs <= timeoutMs) {
    throw rangeError(
      factory,
      'leaseTtl',
      `must be longer than "timeout" (${timeoutMs} ms), or a slot could expire before its take is answered`,
      options.leaseTtl ?? LEASE_TTL,
    )
  }
  const onError = readOneOf<OnError>(factory, 'onError', options.onError, ON_ERROR, 'local')
  if (options.local !== undefined && onError !== 'local') {
    throw new TypeError(
      `${factory}: "local" is only used with onError 'local', got onError ${describe(onError)}`,
    )
  }
  return {
    timeoutMs,
    onError,
    onFailure: readFunction(factory, 'onFailure', options.onFailure),
    onRecovery: readFunction(factory, 'onRecovery', options.onRecovery),
    leaseTtlMs,
    probeMs: readTimer(factory, 'probeInterval', options.probeInterval, '1s'),
    local:
      onError !== 'local'
        ? undefined
        : options.local === undefined
          ? memoryStore()
          : readStore(factory, 'local', options.local),
  }
}

const LEASE_TTL: Duration = '1m'

/**
 * Reads `leaseTtl` alone, for a store that takes no other remote option (Deno KV, whose
 * calls have no timeout of their own): positive, within setTimeout's range as for every
 * store, `'1m'` when absent.
 *
 * @example
 * ```ts
 * readLeaseTtl('denoKvStore', '30s') // 30000
 * ```
 */
export function readLeaseTtl(factory: string, value: unknown): number {
  return readTimer(factory, 'leaseTtl', value, LEASE_TTL)
}

function readTimer(factory: string, option: string, value: unknown, fallback: Duration): number {
  warnIfBareMilliseconds(factory, option, value)
  const ms = readPositiveDuration(factory, option, value, fallback)
  if (ms > MAX_TIMER_MS) {
    throw rangeError(factory, option, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days)`, value)
  }
  return ms
}
