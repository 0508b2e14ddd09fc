/**
 * Keyed limiters without HTTP: per-key budgets for any key a service has (a WebSocket
 * connection, a GraphQL resolver, a queue job, a login attempt, a tenant), kept in a
 * {@link Store}: `memoryStore()` in this process, or a shared store (`@sluice/redis`,
 * `@sluice/cloudflare`, `@sluice/deno-kv`). The HTTP adapters are built on it.
 *
 * @packageDocumentation
 * @module \@sluice/keyed
 */
export {
  type AdaptiveLimitEvent,
  type BulkheadEvent,
  CHANNELS,
  type RateLimitEvent,
  type StoreEvent,
} from './events'
export {
  type KeyedCost,
  type KeyedLimiter,
  type KeyedLimiterOptions,
  type KeyedPermit,
  type KeyedPolicyOptions,
  type KeyedPolicyResult,
  type KeyedResult,
  keyedLimiter,
  type Receipt,
  type Reservation,
} from './keyed-limiter'
export type { MaybePromise } from './maybe-promise'
export { type MemoryStore, type MemoryStoreOptions, memoryStore } from './memory-store'
export type { BlockOptions, PolicyOptions, RateAlgorithm } from './policy'
export type * from './store'
export { type LeasedStore, type LeaseOptions, withLeases } from './with-leases'
