import { type AlgorithmDefinition, buildLimiter, perWindow } from '../algorithm'
import { GcraLimiter, readGcraWindow } from '../gcra/gcra'
import { GcraKernel } from '../gcra/kernel'
import type { LeakyBucketOptions, NormalizedSpec, RateLimiter } from '../types'
import { readPositiveInteger } from '../validation'

type LeakyBucketSpec = Extract<NormalizedSpec, { algorithm: 'leaky-bucket' }>

/** The leaky bucket's entry in the algorithm registry: the GCRA kernel with τ = T. */
export const leakyBucketAlgorithm: AlgorithmDefinition<LeakyBucketSpec> = {
  algorithm: 'leaky-bucket',
  factory: 'leakyBucket',
  timed: true,
  options: ['limit', 'window'],
  normalize(options, label, prefix = '') {
    const limit = readPositiveInteger(label, `${prefix}limit`, options.limit)
    const window = readGcraWindow(label, prefix, options.window, limit, 1)
    return { algorithm: 'leaky-bucket', limit, window }
  },
  kernel: (spec) => new GcraKernel(spec),
  create(spec, name, clock) {
    return new GcraLimiter(leakyBucketAlgorithm, name, clock, new GcraKernel(spec))
  },
  defaultName: (spec) => `${perWindow(spec)}-leaky-bucket`,
}

/**
 * A leaky bucket (as a meter): strictly paced, one permit every `window / limit`,
 * burst 1. Idle time accumulates nothing. It is the token bucket's GCRA kernel with
 * tolerance τ = T, which is why it makes different decisions, not just a different name:
 * pick it when bursts would hurt the downstream (a partner API, a queue consumer).
 *
 * @example
 * ```ts
 * const pace = leakyBucket({ limit: 100, window: '1s' })
 * pace.tryAcquire()       // true
 * pace.tryAcquire()       // false: the next permit is 10 ms away
 * pace.availablePermits() // 1 after any idle time, never more
 * ```
 */
export function leakyBucket(options: LeakyBucketOptions): RateLimiter {
  return buildLimiter(leakyBucketAlgorithm, options) as RateLimiter
}
