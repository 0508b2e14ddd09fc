/**
 * Six rate and concurrency limiters behind one interface (GCRA token bucket, leaky
 * bucket, sliding window, fixed window, warm-up, bulkhead), clocks, waiting with timeouts and
 * cancellation, and decorators. No runtime dependencies.
 *
 * @packageDocumentation
 * @module \@sluice/core
 */
export {
  type AdaptiveAlgorithm,
  type AdaptiveConcurrencyCommonOptions,
  type AdaptiveConcurrencyLimiter,
  type AdaptiveConcurrencyOptions,
  type AdaptivePermit,
  type AimdOptions,
  adaptiveConcurrency,
  type Gradient2Options,
  type LimitChange,
  type LimitChangeReason,
  type PermitOutcome,
  type VegasOptions,
} from './adaptive/adaptive-concurrency'
export { ALGORITHMS, normalizeSpec, RATE_ALGORITHMS } from './algorithms'
export { CARRY_MODES } from './carry'
export { ManualClock, systemClock } from './clock'
export { concurrency } from './concurrency/concurrency'
export { createLimiter } from './create-limiter'
export { type BulkheadedOptions, bulkheaded } from './decorators/bulkheaded'
export type { AsyncMethodWrapper, Method, MethodWrapper } from './decorators/decorate'
export { type RateLimitedOptions, rateLimited } from './decorators/rate-limited'
export { parseDuration } from './duration'
export { RateLimitError, type RateLimitErrorCode, type RateLimitErrorOptions } from './errors'
export { fixedWindow } from './fixed-window/fixed-window'
export { leakyBucket } from './leaky-bucket/leaky-bucket'
export { PRIORITIES } from './priority/priority'
export { slidingWindow } from './sliding-window/sliding-window'
export { tokenBucket } from './token-bucket/token-bucket'
export type {
  Algorithm,
  Carry,
  Clock,
  CommonOptions,
  ConcurrencyLimiter,
  ConcurrencyOptions,
  Duration,
  EnterOptions,
  FixedWindowOptions,
  LeakyBucketOptions,
  Limiter,
  LimiterSpec,
  NormalizedRateSpec,
  NormalizedSpec,
  Partitions,
  Permit,
  Priority,
  PriorityName,
  PriorityOptions,
  QueuePolicy,
  RateAlgorithm,
  RateLimiter,
  RateLimiterSpec,
  ReconfigureOptions,
  ReconfigureSpec,
  SlidingWindowOptions,
  TokenBucketOptions,
  WaitOptions,
  WarmUpTokenBucketOptions,
} from './types'
export { warmUpTokenBucket } from './warm-up/warm-up-token-bucket'
