/**
 * Rate limits and bulkheads for Hono 4, on Node (`@hono/node-server`), Bun, Deno and
 * Cloudflare Workers: `rateLimit()`, `bulkhead()`, `@RateLimit()` and `@Bulkhead()`, with
 * standard RateLimit headers. Re-exports what its users need from `@sluice/http`.
 *
 * @packageDocumentation
 * @module \@sluice/hono
 */
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
export { holdUntilSent } from '@sluice/http/fetch'
export type { ValidateOption, ValidationCode } from './accessors'
export { type BulkheadMiddleware, type BulkheadOptions, bulkhead } from './bulkhead'
export type { GetIp } from './client-address'
export { Bulkhead, type HandlerMethod, RateLimit } from './decorators'
export { type RateLimitMiddleware, type RateLimitOptions, rateLimit } from './rate-limit'
export type { RateLimitEnv, RateLimitVariables } from './variables'
