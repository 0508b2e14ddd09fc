/**
 * A Redis (or Redis Cluster) store for sluice: the same policies shared by every process,
 * one round trip per decision, Redis's own clock, and a choice of what happens while Redis
 * is away.
 *
 * @packageDocumentation
 * @module \@sluice/redis
 */
export type { IoRedisLike, NodeRedisLike, RedisClient, SendCommand } from './client'
export { escapeKey, stateKey } from './keys'
export {
  type OnError,
  type RedisStore,
  RedisStoreError,
  type RedisStoreOptions,
  redisStore,
} from './redis-store'
