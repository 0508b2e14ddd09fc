/**
 * Rate limiting and bulkhead middleware for Hono 4 on Node.js, Bun, Deno and Cloudflare
 * Workers, with the IETF RateLimit headers: `rateLimit()`, `bulkhead()` and the
 * `@RateLimit()`/`@Bulkhead()` decorators.
 *
 * @packageDocumentation
 * @module \@sluice/hono
 */
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
export type { GetIp } from './client-address'
export { Bulkhead, type HandlerMethod, RateLimit } from './decorators'
export { holdUntilSent } from './hold-body'
export { type RateLimitMiddleware, type RateLimitOptions, rateLimit } from './rate-limit'
export type { ValidateOption, ValidationCode } from './validations'
export type { RateLimitEnv, RateLimitVariables } from './variables'
