import { type AlgorithmDefinition, buildLimiter, burst, perWindow } from '../algorithm'
import { formatDuration } from '../duration'
import { GcraLimiter, readGcraWindow } from '../gcra/gcra'
import type { NormalizedSpec, RateLimiter, WarmUpTokenBucketOptions } from '../types'
import { rangeError, readPositiveInteger, readWindow } from '../validation'
import { WarmUpKernel } from './kernel'

type WarmUpSpec = Extract<NormalizedSpec, { algorithm: 'warm-up' }>

/** The warm-up token bucket's entry in the algorithm registry. */
export const warmUpAlgorithm: AlgorithmDefinition<WarmUpSpec> = {
  algorithm: 'warm-up',
  factory: 'warmUpTokenBucket',
  timed: true,
  options: ['limit', 'window', 'capacity', 'warmUp'],
  normalize(options, label, prefix = '') {
    const limit = readPositiveInteger(label, `${prefix}limit`, options.limit)
    const capacity =
      options.capacity === undefined
        ? limit
        : readPositiveInteger(label, `${prefix}capacity`, options.capacity)
    // The cold interval is 3·T, so a cold burst may cost three times a warm one.
    const window = readGcraWindow(label, prefix, options.window, limit, capacity, 3)
    if (3 * window * 1000 > Number.MAX_SAFE_INTEGER) {
      throw rangeError(
        label,
        `${prefix}window`,
        'must be at most 2^53 / 3 microseconds (3,002,399,751,580.33 ms, about 95 years: a cold interval is three times a warm one)',
        options.window,
      )
    }
    if (options.warmUp === undefined) {
      throw new TypeError(
        `${label}: "${prefix}warmUp" is required (a duration such as '30s'), got undefined`,
      )
    }
    const warmUp = readWindow(label, `${prefix}warmUp`, options.warmUp, undefined, true)
    return { algorithm: 'warm-up', limit, window, capacity, warmUp }
  },
  kernel: (spec) => new WarmUpKernel(spec),
  create(spec, name, clock) {
    return new GcraLimiter(warmUpAlgorithm, name, clock, new WarmUpKernel(spec))
  },
  defaultName: (spec) => `${perWindow(spec)}-warm-up-${formatDuration(spec.warmUp)}${burst(spec)}`,
}

/**
 * A token bucket that starts cold: its interval starts at 3·T (a third of the rate) and
 * shrinks linearly to T = window/limit over `warmUp`, measured from creation. The burst
 * budget grows with it from capacity/3 to `capacity` (default `limit`), never below one
 * permit. Use it for a downstream that needs time to warm caches or connection pools
 * after a deploy. A `warmUp` of 0 is a plain token bucket.
 *
 * @example
 * ```ts
 * const limiter = warmUpTokenBucket({ limit: 300, window: '1s', warmUp: '2m' })
 * limiter.tryAcquire() // 100/s now, 200/s after one minute, 300/s from two minutes on
 * ```
 */
export function warmUpTokenBucket(options: WarmUpTokenBucketOptions): RateLimiter {
  return buildLimiter(warmUpAlgorithm, options) as RateLimiter
}
