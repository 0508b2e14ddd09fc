import { ConstantGcraLimiter } from './gcra'
import {
  readClock,
  readName,
  readPositiveDuration,
  readPositiveInteger,
  requireOptions,
} from './options'
import type { RateLimiter, TokenBucketOptions } from './types'

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
  const factory = 'tokenBucket'
  requireOptions(factory, options)
  const limit = readPositiveInteger(factory, 'limit', options.limit)
  return new ConstantGcraLimiter({
    factory,
    limit,
    windowMs: readPositiveDuration(factory, 'window', options.window, '1s'),
    capacity:
      options.capacity === undefined
        ? limit
        : readPositiveInteger(factory, 'capacity', options.capacity),
    name: readName(factory, options, 'token-bucket'),
    clock: readClock(factory, options),
  })
}
