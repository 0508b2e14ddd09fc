/**
 * Rate limits and bulkheads for Fastify 5, with standard RateLimit headers: as plugins,
 * `fastifyRateLimit` and `fastifyBulkhead` (for `app.register`, per-route `config`), and as
 * `onRequest` hooks, `rateLimit()` and `bulkhead()`. Re-exports what its users need from
 * `@sluice/http` (`keys`, `memoryStore`, the option and decision types).
 *
 * @packageDocumentation
 * @module \@sluice/fastify
 */

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
export { type BulkheadHook, type BulkheadOptions, bulkhead } from './bulkhead'
export { fastifyBulkhead, fastifyRateLimit } from './plugin'
export { type RateLimitHook, type RateLimitOptions, rateLimit } from './rate-limit'
