/**
 * A Cloudflare Durable Objects store for sluice: one budget per policy and client key for
 * every isolate and location of a Worker, with the same algorithms, penalties and
 * concurrency leases as `memoryStore()`. Use it with `@sluice/hono` (or any adapter that
 * runs on Workers) and export `SluiceDurableObject` from the Worker's entry.
 *
 * @packageDocumentation
 * @module \@sluice/cloudflare
 */
export { type DurableObjectContext, SluiceDurableObject } from './durable-object'
export type { ObjectStorage } from './object-state'
export {
  type DurableObjectNamespaceLike,
  type DurableObjectStore,
  DurableObjectStoreError,
  type DurableObjectStoreOptions,
  type DurableObjectStubLike,
  durableObjectStore,
  type OnError,
} from './store'
