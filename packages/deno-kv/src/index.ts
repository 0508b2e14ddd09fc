/**
 * A Deno KV store for sluice: one budget per policy and client key for every Deno process
 * on one KV database (and every region on Deno Deploy), with the same algorithms,
 * penalties and concurrency leases as `memoryStore()`.
 *
 * @packageDocumentation
 * @module \@sluice/deno-kv
 */
export {
  type DenoKvStore,
  DenoKvStoreError,
  type DenoKvStoreOptions,
  denoKvStore,
  type KvAtomicLike,
  type KvKey,
  type KvLike,
} from './deno-kv-store'
