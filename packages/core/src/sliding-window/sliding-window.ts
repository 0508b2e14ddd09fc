import { type AlgorithmDefinition, buildLimiter, perWindow } from '../algorithm'
import type { NormalizedSpec, RateLimiter, SlidingWindowOptions } from '../types'
import { rangeError, readInteger, readPositiveInteger, readWindow } from '../validation'
import { WindowLimiter } from '../window-limiter'
import { SlidingWindowKernel } from './kernel'

type SlidingWindowSpec = Extract<NormalizedSpec, { algorithm: 'sliding-window' }>

/** Most slots a window may be cut into: every key keeps `slots + 1` counters. */
const MAX_SLOTS = 10_000
/** Slots a window is cut into when `slots` is left out. */
const DEFAULT_SLOTS = 10

/** The sliding window's entry in the algorithm registry. */
export const slidingWindowAlgorithm: AlgorithmDefinition<SlidingWindowSpec> = {
  algorithm: 'sliding-window',
  factory: 'slidingWindow',
  timed: true,
  options: ['limit', 'window', 'slots'],
  normalize(options, label, prefix = '') {
    const limit = readPositiveInteger(label, `${prefix}limit`, options.limit)
    const window = readWindow(label, `${prefix}window`, options.window, '1s')
    const slots =
      options.slots === undefined
        ? DEFAULT_SLOTS
        : readInteger(
            label,
            `${prefix}slots`,
            options.slots,
            1,
            `an integer from 1 to ${MAX_SLOTS}`,
            MAX_SLOTS,
          )
    // A slot shorter than a microsecond would be shorter than any clock can tell apart.
    if (window * 1000 < slots) {
      throw rangeError(
        label,
        `${prefix}window`,
        `must be at least one microsecond per slot (${slots} slots: ${slots / 1000} ms)`,
        options.window,
      )
    }
    return { algorithm: 'sliding-window', limit, window, slots }
  },
  kernel: (spec) => new SlidingWindowKernel(spec),
  create(spec, name, clock) {
    return new WindowLimiter(slidingWindowAlgorithm, name, clock, new SlidingWindowKernel(spec))
  },
  // The default algorithm of a policy, so its name carries no algorithm: `100-per-1m`.
  defaultName: (spec) =>
    spec.slots === DEFAULT_SLOTS ? perWindow(spec) : `${perWindow(spec)}-${spec.slots}-slots`,
}

/**
 * A sliding window: at most `limit` permits in any rolling `window` (default `'1s'`),
 * to a precision of one slot (`window / slots`, default 10 slots): a permit counts until
 * its slot has wholly left the window, so it may be held up to one slot longer than a
 * perfect log would. No boundary double burst, and memory is `slots + 1` counters
 * regardless of traffic.
 *
 * `acquire` waits in a FIFO queue; while anyone waits, `tryAcquire` refuses and
 * `availablePermits()` reports 0, so waiters are never starved.
 *
 * @example
 * ```ts
 * const perMinute = slidingWindow({ limit: 100, window: '1m', slots: 12 })
 * if (!perMinute.tryAcquire()) console.log(`retry in ${perMinute.retryAfterMs()} ms`)
 * ```
 */
export function slidingWindow(options: SlidingWindowOptions): RateLimiter {
  return buildLimiter(slidingWindowAlgorithm, options) as RateLimiter
}
