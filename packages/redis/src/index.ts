/**
 * A Redis (or Redis Cluster) store for sluice: the same policies shared by every process,
 * one round trip per decision, Redis's own clock, and a choice of what happens while Redis
 * is away.
 *
 * @packageDocumentation
 * @module \@sluice/redis
 */
export type { IoRedisLike, NodeRedisLike, RedisClient, SendCommand } from './client'
export { RedisStoreError } from './errors'
export { escapeKey, stateKey } from './keys'
export type { OnError, RedisStoreOptions } from './options'
export { type RedisStore, redisStore } from './redis-store'
