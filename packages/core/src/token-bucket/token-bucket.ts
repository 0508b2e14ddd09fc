import { type AlgorithmDefinition, buildLimiter, burst, perWindow } from '../algorithm'
import { GcraLimiter, readGcraWindow } from '../gcra/gcra'
import { GcraKernel } from '../gcra/kernel'
import type { NormalizedSpec, RateLimiter, TokenBucketOptions } from '../types'
import { readPositiveInteger } from '../validation'

type TokenBucketSpec = Extract<NormalizedSpec, { algorithm: 'token-bucket' }>

/** The token bucket's entry in the algorithm registry. */
export const tokenBucketAlgorithm: AlgorithmDefinition<TokenBucketSpec> = {
  algorithm: 'token-bucket',
  factory: 'tokenBucket',
  timed: true,
  options: ['limit', 'window', 'capacity'],
  normalize(options, label, prefix = '') {
    const limit = readPositiveInteger(label, `${prefix}limit`, options.limit)
    const capacity =
      options.capacity === undefined
        ? limit
        : readPositiveInteger(label, `${prefix}capacity`, options.capacity)
    const window = readGcraWindow(label, prefix, options.window, limit, capacity)
    return { algorithm: 'token-bucket', limit, window, capacity }
  },
  kernel: (spec) => new GcraKernel(spec),
  create(spec, name, clock) {
    return new GcraLimiter(tokenBucketAlgorithm, name, clock, new GcraKernel(spec))
  },
  defaultName: (spec) => `${perWindow(spec)}-token-bucket${burst(spec)}`,
}

/**
 * A token bucket as GCRA: `limit` permits per `window` (default `'1s'`) on average,
 * bursts of up to `capacity` (default `limit`). State is one number; idling refills
 * to `capacity` and never beyond.
 *
 * `acquire` reserves: a waiting caller takes its permits at once and sleeps until its
 * own slot, so later callers queue behind it. (Guava's `RateLimiter` instead lets a
 * caller go at once and makes the *next* caller pay for its permits.)
 *
 * @example
 * ```ts
 * const bucket = tokenBucket({ limit: 100, window: '1s', capacity: 3 })
 * bucket.tryAcquire(3) // true: the burst
 * bucket.tryAcquire()  // false until 10 ms have passed
 * await bucket.acquire(1, { timeout: '50ms' })
 * ```
 */
export function tokenBucket(options: TokenBucketOptions): RateLimiter {
  return buildLimiter(tokenBucketAlgorithm, options) as RateLimiter
}
