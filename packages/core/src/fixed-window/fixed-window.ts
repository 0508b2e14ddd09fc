import { type AlgorithmDefinition, buildLimiter, perWindow } from '../algorithm'
import type { FixedWindowOptions, NormalizedSpec, RateLimiter } from '../types'
import { readPositiveInteger, readWindow } from '../validation'
import { WindowLimiter } from '../window-limiter'
import { FixedWindowKernel } from './kernel'

type FixedWindowSpec = Extract<NormalizedSpec, { algorithm: 'fixed-window' }>

/** The fixed window's entry in the algorithm registry. */
export const fixedWindowAlgorithm: AlgorithmDefinition<FixedWindowSpec> = {
  algorithm: 'fixed-window',
  factory: 'fixedWindow',
  timed: true,
  options: ['limit', 'window'],
  normalize(options, label, prefix = '') {
    return {
      algorithm: 'fixed-window',
      limit: readPositiveInteger(label, `${prefix}limit`, options.limit),
      window: readWindow(label, `${prefix}window`, options.window, '1s'),
    }
  },
  kernel: (spec) => new FixedWindowKernel(spec),
  create(spec, name, clock) {
    return new WindowLimiter(fixedWindowAlgorithm, name, clock, new FixedWindowKernel(spec))
  },
  defaultName: (spec) => `${perWindow(spec)}-fixed-window`,
}

/**
 * A fixed window: at most `limit` permits per `window` (default `'1s'`), windows aligned
 * to the clock's zero, one counter. The cheapest limiter, with a known weakness: a
 * client can spend `limit` just before a boundary and `limit` again just after it, so
 * up to 2·limit pass within a short span. Use `slidingWindow` if clients would exploit it.
 *
 * `acquire` waits in a FIFO queue; while anyone waits, `tryAcquire` refuses and
 * `availablePermits()` reports 0.
 *
 * @example
 * ```ts
 * const perSecond = fixedWindow({ limit: 1000 })
 * perSecond.tryAcquire() // true until 1000 permits were taken in this second
 * ```
 */
export function fixedWindow(options: FixedWindowOptions): RateLimiter {
  return buildLimiter(fixedWindowAlgorithm, options) as RateLimiter
}
