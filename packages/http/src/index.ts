/**
 * Framework-neutral HTTP rate limiting for sluice: key extractors, the per-key memory
 * store, RateLimit headers and the `Store` contract. Users of a framework install its
 * adapter (`@sluice/express`, `@sluice/koa`, `@sluice/hono`, `@sluice/fastify`), which
 * re-exports what they need from here; adapter authors use `@sluice/http/adapter` (with
 * `@sluice/http/node` or `@sluice/http/fetch`), store authors `@sluice/keyed/store`.
 *
 * @packageDocumentation
 * @module \@sluice/http
 */

export type { BlockOptions, MaybePromise, PolicyOptions, RateAlgorithm } from '@sluice/keyed'
export {
  type AdaptiveLimitEvent,
  type BulkheadEvent,
  CHANNELS,
  type MemoryStore,
  type MemoryStoreOptions,
  memoryStore,
  type RateLimitEvent,
  type StoreEvent,
} from '@sluice/keyed'
export type * from '@sluice/keyed/store'
export type { BulkheadOptions } from './bulkhead-engine'
export type { BulkheadInfo, Decision, RateLimitInfo } from './decision'
export type { LimitedBody } from './engine'
export type { HeaderMode } from './headers'
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
export type { PoliciesOptions } from './policy'
export type {
  KeyState,
  RateLimitOptions,
  ReconfigurableOptions,
  WaitingOptions,
} from './rate-limit-engine'
export type { ProxyValidateOption, ProxyWarningCode, ValidateOption } from './validate'
