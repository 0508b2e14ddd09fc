import { parseDuration } from './duration'
import { DEFAULT_PRIORITY, readPriority } from './priority/priority'
import type { Duration } from './types'
import { describe, readInteger } from './validation'
import { warnIfBareMilliseconds } from './warnings'

// Checks made per call (permits, wait options) rather than at construction; those live
// in validation.ts.

/**
 * Marks waiting options sluice builds itself from a duration it has read, and warned
 * about, already: a decorator's `wait` becomes the `timeout` of every `acquire`, in
 * milliseconds, and must not be warned about again as a bare `"timeout"`. A symbol key,
 * so object spread keeps it and the unknown-option check does not see it.
 */
export const TIMEOUT_READ: unique symbol = Symbol('sluice.timeoutRead')

/**
 * Waiting options for `timeoutMs`, already read from an option of the caller's (see
 * {@link TIMEOUT_READ}).
 *
 * @example
 * ```ts
 * const wait = waitFor(500) // limiter.acquire(1, wait) warns nothing, though 500 is bare
 * ```
 */
export function waitFor(timeoutMs: number): { timeout: number } {
  return { timeout: timeoutMs, [TIMEOUT_READ]: true } as { timeout: number }
}

/** A wait bound: `undefined` and `Infinity` mean none. A bare number under 1000 is warned about. */
export function readTimeout(method: string, value: unknown, read = false): number {
  if (value === undefined || value === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY
  const ms = parseDuration(value as Duration, `${method}: "timeout"`)
  if (ms < 1000 && !read) warnIfBareMilliseconds(method, 'timeout', value)
  return ms
}

/** True for a positive integer: the one check on the hot path. */
export function isPermitCount(permits: number): boolean {
  return Number.isInteger(permits) && permits > 0
}

export function invalidPermits(method: string, permits: unknown): Error {
  const message = `${method}: "permits" must be a positive integer, got ${describe(permits)}`
  return typeof permits === 'number' ? new RangeError(message) : new TypeError(message)
}

/** The validated `timeout` and `signal` of a waiting call. */
export interface WaitSettings {
  timeoutMs: number
  signal: AbortSignal | undefined
}

const WAIT_OPTIONS = new Set(['timeout', 'signal'])

export function readWaitOptions(
  method: string,
  options: unknown,
  extra: readonly string[] = [],
): WaitSettings {
  if (options === undefined) return { timeoutMs: Number.POSITIVE_INFINITY, signal: undefined }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${method}: options must be an object, got ${describe(options)}`)
  }
  for (const name of Object.keys(options)) {
    if (!WAIT_OPTIONS.has(name) && !extra.includes(name)) {
      throw new TypeError(
        `${method}: unknown option "${name}" (known: timeout, signal${extra.map((e) => `, ${e}`).join('')})`,
      )
    }
  }
  const { timeout, signal } = options as { timeout?: unknown; signal?: unknown }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`${method}: "signal" must be an AbortSignal, got ${describe(signal)}`)
  }
  const read = (options as { [TIMEOUT_READ]?: true })[TIMEOUT_READ] === true
  return { timeoutMs: readTimeout(method, timeout, read), signal }
}

/**
 * Smallest step that still moves `base + delay` forward, for rounding a computed delay
 * up until the clock arithmetic (`now + delay`) really lands on the permitted side.
 */
export function nudge(base: number, delay: number, attempt: number): number {
  return delay + Math.max(Math.abs(base + delay), 1) * Number.EPSILON * 2 ** attempt
}

/** The validated `permits` and `priority` of a concurrency limiter's `tryEnter` or `enter`. */
export interface EnterSettings {
  permits: number
  priority: number
}

const DEFAULT_ENTER: EnterSettings = { permits: 1, priority: DEFAULT_PRIORITY }

/**
 * `tryEnter`'s argument: a permit count, or `{ permits, priority }`. The plain forms
 * (nothing, or a number) allocate nothing.
 */
export function readEnterOptions(method: string, options: unknown): EnterSettings {
  if (options === undefined) return DEFAULT_ENTER
  if (typeof options !== 'object' || options === null) {
    const permits = options as number
    if (!isPermitCount(permits)) throw invalidPermits(method, options)
    return permits === 1 ? DEFAULT_ENTER : { permits, priority: DEFAULT_PRIORITY }
  }
  if (Array.isArray(options)) {
    throw new TypeError(`${method}: options must be an object, got ${describe(options)}`)
  }
  for (const name of Object.keys(options)) {
    if (name !== 'permits' && name !== 'priority') {
      throw new TypeError(`${method}: unknown option "${name}" (known: permits, priority)`)
    }
  }
  const { permits = 1, priority } = options as { permits?: unknown; priority?: unknown }
  if (!isPermitCount(permits as number)) throw invalidPermits(method, permits)
  return { permits: permits as number, priority: readPriority(method, priority) }
}

/**
 * `enter`'s options: `timeout`, `signal`, `permits` and `priority`, validated. `priority`
 * is read apart from the waiting options every limiter shares.
 */
export function readEnterWaitOptions(
  method: string,
  options: unknown,
): WaitSettings & EnterSettings {
  const hasPriority = typeof options === 'object' && options !== null && 'priority' in options
  const { priority, ...rest } = hasPriority ? (options as { priority?: unknown }) : {}
  const wait = readWaitOptions(method, hasPriority ? rest : options, ['permits'])
  const permits = (options as { permits?: unknown } | undefined)?.permits ?? 1
  if (!isPermitCount(permits as number)) throw invalidPermits(method, permits)
  return { ...wait, permits: permits as number, priority: readPriority(method, priority) }
}

/** `maxQueue`: a non-negative integer or `Infinity`, 0 when absent. */
export function readMaxQueue(factory: string, option: string, value: unknown): number {
  if (value === undefined) return 0
  if (value === Number.POSITIVE_INFINITY) return value
  return readInteger(factory, option, value, 0, 'a non-negative integer or Infinity')
}
