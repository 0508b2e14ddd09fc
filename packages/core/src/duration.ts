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

/** Unit words people write, by the unit a duration string takes. */
const UNIT_WORDS: Record<string, string> = {
  ms: 'ms',
  msec: 'ms',
  msecs: 'ms',
  millisecond: 'ms',
  milliseconds: 'ms',
  s: 's',
  sec: 's',
  secs: 's',
  second: 's',
  seconds: 's',
  m: 'm',
  min: 'm',
  mins: 'm',
  minute: 'm',
  minutes: 'm',
  h: 'h',
  hr: 'h',
  hrs: 'h',
  hour: 'h',
  hours: 'h',
  d: 'd',
  day: 'd',
  days: 'd',
}

/**
 * The duration string meant by one sluice cannot read: `'1 minute'` (@fastify/rate-limit's
 * and ms's style) is `'1m'`, `'30 Seconds'` is `'30s'`. `undefined` when nothing fits.
 */
function meant(value: string): string | undefined {
  const match = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-z]+)\s*$/i.exec(value)
  const unit = match === null ? undefined : UNIT_WORDS[(match[2] as string).toLowerCase()]
  return unit === undefined ? undefined : `${match?.[1]}${unit}`
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
  const suggestion = typeof value === 'string' ? meant(value) : undefined
  throw new RangeError(
    `${optionLabel} must be a duration (milliseconds as a non-negative number, or a string such as '250ms', '1.5s', '5m', '2h', '1d'), got ${describe(value)}${suggestion === undefined ? '' : ` (did you mean '${suggestion}'?)`}`,
  )
}

const UNITS: readonly [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1000, 's'],
]

/**
 * Milliseconds as the shortest exact duration string: `60000` → `'1m'`, `1500` →
 * `'1500ms'`. Used in default policy names, so it must never round.
 *
 * @example
 * ```ts
 * formatDuration(90_000) // '90s'
 * ```
 */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s'
  for (const [size, unit] of UNITS) if (ms % size === 0) return `${ms / size}${unit}`
  return `${ms}ms`
}
