import { describe } from './describe'
import type { Duration } from './types'

const PATTERN = /^(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h|d)$/

// Seconds-based units are scaled by decimal exponent first (`Number('1.5e3')` is exactly
// 1500, where 1.5 * 1000 can round), then by an integer factor, which stays exact.
const SCALE: Record<string, [exponent: string, factor: number]> = {
  ms: ['e0', 1],
  s: ['e3', 1],
  m: ['e3', 60],
  h: ['e3', 3600],
  d: ['e3', 86_400],
}

/**
 * Converts a {@link Duration} to milliseconds: a finite non-negative number is taken as
 * milliseconds; a string is a decimal number followed by `ms`, `s`, `m`, `h` or `d`.
 * Anything else throws a `RangeError` whose message starts with `optionLabel`.
 *
 * @param optionLabel How the message names the option, e.g. `tokenBucket: "window"`.
 * @example
 * ```ts
 * parseDuration('1.5s', 'window') // 1500
 * parseDuration(250, 'window')    // 250
 * parseDuration('soon', 'window') // RangeError: window must be a duration ..., got "soon"
 * ```
 */
export function parseDuration(value: Duration, optionLabel = 'duration'): number {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && value >= 0) return value
  } else if (typeof value === 'string') {
    const match = PATTERN.exec(value)
    if (match !== null) {
      const [exponent, factor] = SCALE[match[2] as string] as [string, number]
      const ms = Number(`${match[1]}${exponent}`) * factor
      if (Number.isFinite(ms)) return ms
    }
  }
  throw new RangeError(
    `${optionLabel} must be a duration (milliseconds as a non-negative number, or a string such as '250ms', '1.5s', '5m', '2h', '1d'), got ${describe(value)}`,
  )
}
