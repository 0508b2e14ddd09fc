/**
 * Rate limits and bulkheads for Koa 3 (and 2): `rateLimit()`, `bulkhead()`,
 * `@RateLimit()` and `@Bulkhead()`, with standard RateLimit headers. Re-exports what its
 * users need from `@sluice/http` (`keys`, `memoryStore`, the option and decision types).
 *
 * @packageDocumentation
 * @module \@sluice/koa
 */
import './state'

export type {
  ProxyValidateOption as ValidateOption,
  ProxyWarningCode as ValidationCode,
} from '@sluice/http'
export {
  addressKey,
  type BlockOptions,
  type BulkheadEvent,
  type BulkheadInfo,
  CHANNELS,
  type Decision,
  FALLBACK_KEY,
  type HeaderMode,
  type IpKeyOptions,
  type KeyExtractor,
  type KeyState,
  keys,
  type LimitedBody,
  type MaybePromise,
  type MemoryStore,
  type MemoryStoreOptions,
  memoryStore,
  type Policy,
  type PolicyOptions,
  type RateAlgorithm,
  type RateLimitEvent,
  type RateLimitInfo,
  type Store,
  type StoreEvent,
  type WaitingOptions,
} from '@sluice/http'
export { type BulkheadMiddleware, type BulkheadOptions, bulkhead } from './bulkhead'
export { Bulkhead, type HandlerMethod, RateLimit } from './decorators'
export { type RateLimitMiddleware, type RateLimitOptions, rateLimit } from './rate-limit'
export type { RateLimitState } from './state'
