/**
 * Rate limiting and bulkhead middleware for Koa 3 (and 2), with the IETF RateLimit
 * headers: `rateLimit()`, `bulkhead()` and the `@RateLimit()`/`@Bulkhead()` decorators.
 *
 * @packageDocumentation
 * @module \@sluice/koa
 */
import './state'

export {
  addressKey,
  type BulkheadDecision,
  type Decision,
  FALLBACK_KEY,
  type HeaderMode,
  type IpKeyOptions,
  type KeyExtractor,
  keys,
  type Lease,
  type LimitedBody,
  type MaybePromise,
  type MemoryStore,
  type MemoryStoreOptions,
  memoryStore,
  type Policy,
  type PolicyOptions,
  type PolicyResult,
  type RateAlgorithm,
  type RateLimitInfo,
  type Store,
  type TakeResult,
  type WaitOptions,
} from '@sluice/http'
export { type BulkheadMiddleware, type BulkheadOptions, bulkhead } from './bulkhead'
export { Bulkhead, type HandlerMethod, RateLimit } from './decorators'
export { type RateLimitMiddleware, type RateLimitOptions, rateLimit } from './rate-limit'
export type { RateLimitState } from './state'
export type { ValidateOption, ValidationCode } from './validations'
