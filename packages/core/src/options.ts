import { parseDuration } from './duration'
import type { Duration } from './types'
import { describe } from './validation'

// Checks made per call (permits, wait options) rather than at construction; those live
// in validation.ts.

/** A wait bound: `undefined` and `Infinity` mean none. */
export function readTimeout(method: string, value: unknown): number {
  if (value === undefined || value === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY
  return parseDuration(value as Duration, `${method}: "timeout"`)
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
  return { timeoutMs: readTimeout(method, timeout), signal }
}

/**
 * Smallest step that still moves `base + delay` forward, for rounding a computed delay
 * up until the clock arithmetic (`now + delay`) really lands on the permitted side.
 */
export function nudge(base: number, delay: number, attempt: number): number {
  return delay + Math.max(Math.abs(base + delay), 1) * Number.EPSILON * 2 ** attempt
}
