export type { IoRedisLike, NodeRedisLike, RedisClient, SendCommand } from './client'
export { escapeKey, stateKey } from './keys'
export {
  type OnError,
  type RedisStore,
  RedisStoreError,
  type RedisStoreOptions,
  redisStore,
} from './redis-store'
