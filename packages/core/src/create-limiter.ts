import { concurrency } from './concurrency'
import { describe } from './describe'
import { fixedWindow } from './fixed-window'
import { leakyBucket } from './leaky-bucket'
import { slidingWindow } from './sliding-window'
import { tokenBucket } from './token-bucket'
import type {
  Algorithm,
  Clock,
  ConcurrencyLimiter,
  LimiterSpec,
  RateLimiter,
  RateLimiterSpec,
} from './types'
import { warmUpTokenBucket } from './warm-up-token-bucket'

/**
 * Every `algorithm` a {@link LimiterSpec} may name, in a stable order.
 *
 * @example
 * ```ts
 * ALGORITHMS.includes(spec.algorithm) // validate a spec read from config
 * ```
 */
export const ALGORITHMS: readonly Algorithm[] = [
  'token-bucket',
  'leaky-bucket',
  'sliding-window',
  'fixed-window',
  'warm-up',
  'concurrency',
]

/**
 * Builds any of the six limiters from a plain spec, validating its options exactly as
 * the factory does. The spec is what the HTTP layer and the stores share; `clock`
 * (default `systemClock`) overrides any clock in the spec.
 *
 * @example
 * ```ts
 * const limiter = createLimiter({ algorithm: 'sliding-window', limit: 100, window: '1m' })
 * const bulkhead = createLimiter({ algorithm: 'concurrency', max: 20 }, new ManualClock())
 * ```
 */
export function createLimiter(
  spec: Extract<LimiterSpec, { algorithm: 'concurrency' }>,
  clock?: Clock,
): ConcurrencyLimiter
export function createLimiter(spec: RateLimiterSpec, clock?: Clock): RateLimiter
export function createLimiter(spec: LimiterSpec, clock?: Clock): RateLimiter | ConcurrencyLimiter
export function createLimiter(spec: LimiterSpec, clock?: Clock): RateLimiter | ConcurrencyLimiter {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new TypeError(`createLimiter: spec must be an object, got ${describe(spec)}`)
  }
  const withClock = clock === undefined ? spec : { ...spec, clock }
  switch (spec.algorithm) {
    case 'token-bucket':
      return tokenBucket(withClock as typeof spec)
    case 'leaky-bucket':
      return leakyBucket(withClock as typeof spec)
    case 'sliding-window':
      return slidingWindow(withClock as typeof spec)
    case 'fixed-window':
      return fixedWindow(withClock as typeof spec)
    case 'warm-up':
      return warmUpTokenBucket(withClock as typeof spec)
    case 'concurrency':
      return concurrency(withClock as typeof spec)
    default:
      throw new TypeError(
        `createLimiter: "algorithm" must be one of ${ALGORITHMS.map((a) => `'${a}'`).join(', ')}, got ${describe((spec as { algorithm: unknown }).algorithm)}`,
      )
  }
}
