/**
 * The construction-time checks every sluice package shares (`@sluice/core/validation`):
 * one way to describe a received value, one argument order (`factory, option, value`),
 * one rule per kind of option, and one check for unknown option names. Every message
 * names the factory the user called, the option, the rule and the value received:
 * `tokenBucket: "capacity" must be a positive integer, got 0`.
 *
 * For sluice's own packages and for authors of adapters and stores built on them; users
 * of the limiters never need it.
 *
 * @module
 */
import { systemClock } from './clock'
import { describe, rangeError, typeError } from './describe'
import { parseDuration } from './duration'
import type { Clock, Duration } from './types'
import { warnIfBareMilliseconds } from './warnings'

export { describe, rangeError, typeError } from './describe'

/**
 * Edit distance counting a swap of two neighbours as one edit (optimal string
 * alignment), for "did you mean" hints: `wiat` is one typo away from `wait`. Names are
 * short, so O(n·m) is nothing.
 */
function distance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)]
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, rows[i - 2]![j - 2]! + 1)
      }
      row[j] = d
    }
    rows.push(row)
  }
  return rows[a.length]![b.length]!
}

/**
 * The known name closest to a misspelt one (`limt` → `limit`, `maxkeys` → `maxKeys`), or
 * `undefined` when none is close: at most a third of the name's letters differ, ignoring case.
 *
 * @example
 * ```ts
 * suggest('limt', ['limit', 'window']) // 'limit'
 * ```
 */
export function suggest(name: string, known: Iterable<string>): string | undefined {
  const lower = name.toLowerCase()
  let best: string | undefined
  let bestDistance = Math.max(1, Math.floor(name.length / 3)) + 1
  for (const candidate of known) {
    const d = distance(lower, candidate.toLowerCase())
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}

/**
 * Checks that `value` is an options object (or absent) whose every name is one the
 * factory knows: a misspelt option would otherwise silently leave its default in force
 * (`windowMs` giving 100 per second instead of per minute). `hints` maps names other
 * libraries use to the advice to give (`windowMs: 'use "window"'`); otherwise the
 * closest known name is suggested.
 *
 * Returns the options as a copy of their own properties on an object without a
 * prototype: read through it, an option nobody gave is `undefined` even when another bug
 * of the app has polluted `Object.prototype` (`Object.prototype.dryRun = true` must not
 * turn every limiter off).
 *
 * Optional options are the caller's to default (`options = {}`): `undefined` is refused.
 * @example
 * ```ts
 * const options = readOptions('memoryStore', input, ['maxKeys', 'clock'])
 * // memoryStore({ maxkeys: 10 }) → TypeError: memoryStore: unknown option "maxkeys" (did you mean "maxKeys"?)
 * ```
 */
export function readOptions<T extends object>(
  factory: string,
  value: T,
  known: readonly string[] | ReadonlySet<string>,
  hints: Readonly<Record<string, string>> = {},
): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`${factory}: options must be an object, got ${describe(value)}`)
  }
  const names: ReadonlySet<string> = known instanceof Set ? known : new Set(known)
  for (const name of Object.keys(value)) {
    if (names.has(name)) continue
    // A misspelt name of another library's option gets that option's advice too.
    const closest = Object.hasOwn(hints, name)
      ? name
      : suggest(name, [...names, ...Object.keys(hints)])
    const advice =
      closest === undefined
        ? ''
        : Object.hasOwn(hints, closest)
          ? ` (${hints[closest]})`
          : ` (did you mean "${closest}"?)`
    throw new TypeError(`${factory}: unknown option "${name}"${advice}`)
  }
  return Object.assign(Object.create(null) as T, value)
}

/**
 * An integer from `min` up (and up to `max`), always a safe integer: beyond 2^53 integers
 * are no longer exact, so counting would silently go wrong.
 *
 * @example
 * ```ts
 * readInteger('bulkhead', 'maxQueue', 10, 0, 'a non-negative integer') // 10
 * ```
 */
export function readInteger(
  factory: string,
  option: string,
  value: unknown,
  min: number,
  rule: string,
  max: number = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number') throw typeError(factory, option, `must be ${rule}`, value)
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw rangeError(factory, option, `must be ${rule}`, value)
  }
  return value
}

/**
 * A positive safe integer (a limit, a capacity, a cost).
 *
 * @example
 * ```ts
 * readPositiveInteger('tokenBucket', 'capacity', 0) // RangeError: tokenBucket: "capacity" must be a positive integer, got 0
 * ```
 */
export function readPositiveInteger(factory: string, option: string, value: unknown): number {
  return readInteger(factory, option, value, 1, 'a positive integer')
}

/**
 * A non-negative safe integer (a queue length).
 *
 * @example
 * ```ts
 * readNonNegativeInteger('bulkhead', 'maxQueue', 0) // 0
 * ```
 */
export function readNonNegativeInteger(factory: string, option: string, value: unknown): number {
  return readInteger(factory, option, value, 0, 'a non-negative integer')
}

/**
 * The longest duration an option that is not a window accepts (a timeout, a lease's ttl):
 * 2^53 ms, about 285,000 years, so any sum of it with a clock reading stays finite. Windows
 * (and `warmUp`) stop a thousand times sooner, at {@link MAX_WINDOW_MS}.
 */
export const MAX_DURATION_MS = 2 ** 53

/**
 * A {@link Duration} in milliseconds (`fallback` when absent), at most
 * {@link MAX_DURATION_MS}. Zero is allowed; see {@link readPositiveDuration}.
 *
 * @example
 * ```ts
 * readDuration('bulkhead', 'queueTimeout', '2s') // 2000
 * ```
 */
export function readDuration(
  factory: string,
  option: string,
  value: unknown,
  fallback?: Duration,
): number {
  // Only `undefined` means absent: `null` is a mistake, not "no duration".
  const given = value === undefined ? fallback : value
  const ms = parseDuration(given as Duration, `${factory}: "${option}"`)
  if (ms > MAX_DURATION_MS) {
    throw rangeError(factory, option, `must be at most ${MAX_DURATION_MS} ms`, value)
  }
  return ms
}

/**
 * Like {@link readDuration}, refusing zero (a window, an interval).
 *
 * @example
 * ```ts
 * readPositiveDuration('tokenBucket', 'window', '1m') // 60000
 * ```
 */
export function readPositiveDuration(
  factory: string,
  option: string,
  value: unknown,
  fallback?: Duration,
): number {
  const ms = readDuration(factory, option, value, fallback)
  if (ms === 0) {
    throw rangeError(
      factory,
      option,
      'must be a positive duration',
      value === undefined ? fallback : value,
    )
  }
  return ms
}

/**
 * Longest window a limiter counts in, for every algorithm: 2^53 − 1 microseconds
 * (9,007,199,254.740991 s, about 285 years), the kernels' unit being whole microseconds.
 */
export const MAX_WINDOW_MS = Number.MAX_SAFE_INTEGER / 1000

/**
 * A limiter's `window` (or another length its kernel counts in, such as `warmUp`):
 * a positive duration of whole microseconds, the unit the kernels decide in, from one
 * microsecond to {@link MAX_WINDOW_MS}. A window below a microsecond would be shorter
 * than any clock's resolution; one that is not a whole number of microseconds would
 * count in fractions no store can keep exactly. A bare number under 1000 is valid but
 * warned about (`ERR_SLUICE_WINDOW_IN_MS`, or `ERR_SLUICE_DURATION_IN_MS` for a `warmUp`).
 *
 * @example
 * ```ts
 * readWindow('slidingWindow', 'window', '1m', '1s') // 60000
 * ```
 */
export function readWindow(
  factory: string,
  option: string,
  value: unknown,
  fallback?: Duration,
  allowZero = false,
): number {
  // Only `undefined` means absent: `null` is a mistake, not "no window".
  const shown = value === undefined ? fallback : value
  const ms = parseDuration(shown as Duration, `${factory}: "${option}"`)
  if (ms === 0) {
    if (!allowZero) throw rangeError(factory, option, 'must be a positive duration', shown)
    return 0
  }
  // The window's own cap, checked first: a longer one must not be told of another's.
  if (ms > MAX_WINDOW_MS) {
    throw rangeError(
      factory,
      option,
      'must be at most 2^53 microseconds (9,007,199,254,740.991 ms, about 285 years)',
      shown,
    )
  }
  const us = ms * 1000
  if (us < 1) {
    throw rangeError(factory, option, 'must be at least one microsecond (0.001 ms)', shown)
  }
  if (Math.abs(us - Math.round(us)) > 1e-9 * Math.max(1, us)) {
    throw rangeError(factory, option, 'must be a whole number of microseconds', shown)
  }
  // A valid but bare `window: 60` is far more often a minute meant than 60 ms.
  warnIfBareMilliseconds(factory, option, value)
  return Math.round(us) / 1000
}

/** Longest name a limiter or policy may carry: names go into headers and store keys. */
export const MAX_NAME_LENGTH = 128

/**
 * A name: a non-empty string of at most {@link MAX_NAME_LENGTH} characters, or `fallback`
 * when absent.
 *
 * @example
 * ```ts
 * readName('tokenBucket', 'name', undefined, 'token-bucket') // 'token-bucket'
 * ```
 */
export function readName(
  factory: string,
  option: string,
  value: unknown,
  fallback?: string,
): string {
  if (value === undefined && fallback !== undefined) return fallback
  if (typeof value !== 'string' || value === '') {
    throw typeError(factory, option, 'must be a non-empty string', value)
  }
  if (value.length > MAX_NAME_LENGTH) {
    throw rangeError(factory, option, `must be at most ${MAX_NAME_LENGTH} characters`, value)
  }
  return value
}

/**
 * A {@link Clock}: an object with `now()` and `sleep()`; `systemClock` when absent.
 *
 * @example
 * ```ts
 * readClock('tokenBucket', 'clock', new ManualClock())
 * ```
 */
export function readClock(factory: string, option: string, value: unknown): Clock {
  if (value === undefined) return systemClock
  const clock = value as Partial<Clock> | null
  if (
    typeof clock !== 'object' ||
    clock === null ||
    typeof clock.now !== 'function' ||
    typeof clock.sleep !== 'function'
  ) {
    throw typeError(factory, option, 'must be an object with now() and sleep()', value)
  }
  return clock as Clock
}

/**
 * A function, or `undefined` when absent.
 *
 * @example
 * ```ts
 * readFunction('rateLimit', 'skip', (req) => false)
 * ```
 */
export function readFunction<F>(
  factory: string,
  option: string,
  value: F | undefined,
): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw typeError(factory, option, 'must be a function', value)
  }
  return value
}

/**
 * A boolean, or `fallback` when absent.
 *
 * @example
 * ```ts
 * readBoolean('rateLimit', 'dryRun', undefined, false) // false
 * ```
 */
export function readBoolean(
  factory: string,
  option: string,
  value: unknown,
  fallback: boolean,
): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw typeError(factory, option, 'must be true or false', value)
  return value
}

/**
 * One of a fixed set of values, or `fallback` when absent.
 *
 * @example
 * ```ts
 * readOneOf('redisStore', 'onError', 'deny', ['deny', 'allow', 'local'], 'local') // 'deny'
 * ```
 */
export function readOneOf<T>(
  factory: string,
  option: string,
  value: unknown,
  choices: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback
  if (!choices.includes(value as T)) {
    const list = choices.map((c) => (typeof c === 'string' ? `'${c}'` : String(c))).join(', ')
    throw typeError(factory, option, `must be one of ${list}`, value)
  }
  return value as T
}
