import { systemClock } from './clock'
import { describe } from './describe'
import { parseDuration } from './duration'
import type { Clock, CommonOptions, Duration } from './types'

// Construction-time validation shared by the factories. Each helper names the factory,
// the option, the rule and the value received, so a bad config explains itself.

export function requireOptions(factory: string, options: unknown): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${factory}: options must be an object, got ${describe(options)}`)
  }
}

export function readPositiveInteger(factory: string, option: string, value: unknown): number {
  return readInteger(factory, option, value, 1, 'a positive integer')
}

export function readInteger(
  factory: string,
  option: string,
  value: unknown,
  min: number,
  rule: string,
): number {
  const message = `${factory}: "${option}" must be ${rule}, got ${describe(value)}`
  if (typeof value !== 'number') throw new TypeError(message)
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(message)
  return value
}

export function readDuration(
  factory: string,
  option: string,
  value: unknown,
  fallback: Duration,
): number {
  return parseDuration((value ?? fallback) as Duration, `${factory}: "${option}"`)
}

export function readPositiveDuration(
  factory: string,
  option: string,
  value: unknown,
  fallback: Duration,
): number {
  const ms = readDuration(factory, option, value, fallback)
  if (ms === 0) {
    throw new RangeError(
      `${factory}: "${option}" must be a positive duration, got ${describe(value)}`,
    )
  }
  return ms
}

export function readName(factory: string, options: CommonOptions, fallback: string): string {
  const { name } = options
  if (name === undefined) return fallback
  if (typeof name !== 'string' || name === '') {
    throw new TypeError(`${factory}: "name" must be a non-empty string, got ${describe(name)}`)
  }
  return name
}

export function readClock(factory: string, options: CommonOptions): Clock {
  const { clock } = options
  if (clock === undefined) return systemClock
  if (
    typeof clock !== 'object' ||
    clock === null ||
    typeof clock.now !== 'function' ||
    typeof clock.sleep !== 'function'
  ) {
    throw new TypeError(
      `${factory}: "clock" must be an object with now() and sleep(), got ${describe(clock)}`,
    )
  }
  return clock
}

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

export function readWaitOptions(method: string, options: unknown): WaitSettings {
  if (options === undefined) return { timeoutMs: Number.POSITIVE_INFINITY, signal: undefined }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`${method}: options must be an object, got ${describe(options)}`)
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
