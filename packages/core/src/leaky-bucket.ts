import { ConstantGcraLimiter } from './gcra'
import {
  readClock,
  readName,
  readPositiveDuration,
  readPositiveInteger,
  requireOptions,
} from './options'
import type { LeakyBucketOptions, RateLimiter } from './types'

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
  const factory = 'leakyBucket'
  requireOptions(factory, options)
  return new ConstantGcraLimiter({
    factory,
    limit: readPositiveInteger(factory, 'limit', options.limit),
    windowMs: readPositiveDuration(factory, 'window', options.window, '1s'),
    capacity: 1,
    name: readName(factory, options, 'leaky-bucket'),
    clock: readClock(factory, options),
  })
}
