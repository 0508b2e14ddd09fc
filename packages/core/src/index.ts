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
} from './adaptive-concurrency'
export type { AlgorithmDefinition } from './algorithm'
export { ALGORITHMS, algorithmDefinition, normalizeSpec, RATE_ALGORITHMS } from './algorithms'
export { type BulkheadedOptions, bulkheaded } from './bulkheaded'
export { ManualClock, systemClock } from './clock'
export { isCompact, isPortable } from './compact'
export { concurrency } from './concurrency'
export { createLimiter } from './create-limiter'
export type { AsyncMethodWrapper, Method, MethodWrapper } from './decorate'
export { parseDuration } from './duration'
export { RateLimitError, type RateLimitErrorCode, type RateLimitErrorOptions } from './errors'
export { fixedWindow } from './fixed-window'
export { leakyBucket } from './leaky-bucket'
export { type RateLimitedOptions, rateLimited } from './rate-limited'
export { slidingWindow } from './sliding-window'
export { tokenBucket } from './token-bucket'
export type * from './types'
export { warmUpTokenBucket } from './warm-up-token-bucket'
