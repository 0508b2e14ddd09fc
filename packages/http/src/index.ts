/**
 * The framework-neutral HTTP layer the Express, Koa and Hono adapters share: key
 * extractors, the per-key memory store, RateLimit headers and the engines that decide each
 * request. Use it directly to write an adapter; applications install an adapter, which
 * re-exports what they need.
 *
 * @packageDocumentation
 * @module \@sluice/http
 */
export type { RequestAccessors, ResponseAccessors } from './accessors'
export { type BulkheadDecision, BulkheadEngine, type BulkheadOptions } from './bulkhead-engine'
export type { Decision, RateLimitInfo } from './decision'
export {
  createHeaderWriter,
  type HeaderMode,
  type HeaderWriter,
  retryAfterSeconds,
  toSeconds,
} from './headers'
/**
 * Key extractors: who a request is counted as. `keys.ip()` (the default) is the client
 * address as the framework resolved it, IPv6 grouped by /56; `keys.header(name)`,
 * `keys.route()` (method and route pattern), `keys.global()` (one budget for all),
 * `keys.compose(...)` (all parts together) and `keys.first(...)` (the first that finds a
 * key). A request whose key comes back empty is counted under one shared fallback key.
 *
 * @example
 * ```ts
 * rateLimit({ limit: 1000, window: '1h', key: keys.first(keys.header('x-api-key'), keys.ip()) })
 * ```
 */
export * as keys from './keys'
export { addressKey, FALLBACK_KEY, type IpKeyOptions, type KeyExtractor } from './keys'
export { type MemoryStore, type MemoryStoreOptions, memoryStore } from './memory-store'
export {
  compilePolicies,
  type PoliciesOptions,
  type PolicyOptions,
  type RateAlgorithm,
} from './policy'
export {
  type LimitedBody,
  RateLimitEngine,
  type RateLimitOptions,
  type WaitOptions,
} from './rate-limit-engine'
export type * from './store'
export { emitWarning, enabledChecks, type ValidateOption } from './warnings'
