import { expect, it } from 'vitest'
import { type RedisClient, redisStore } from '../src/index'
import { connect, DAY, describeRedis, policy, uniquePrefix } from './helpers'

const redis = connect()
const call = (args: string[]) => redis.call(args[0]!, ...args.slice(1))

const clients: [string, RedisClient][] = [
  ['an ioredis client', redis],
  ['a sendCommand function', (args) => call(args)],
  // The shape of a node-redis v4+ client: sendCommand(args) resolving with the reply.
  ['a node-redis-shaped client', { sendCommand: (args: string[]) => call(args) }],
]

describeRedis('clients', () => {
  it.each(clients)('works with %s, including a NOSCRIPT reload', async (_, client) => {
    const failures: unknown[] = []
    const store = redisStore({
      client,
      prefix: uniquePrefix(),
      onError: 'deny',
      onFailure: (error) => failures.push(error),
    })
    const daily = policy.fixedWindow('daily', { limit: 2, window: DAY })
    const slots = policy.concurrency('slots', 1)
    await redis.script('FLUSH')
    const first = await store.take('k', [daily, slots], 1)
    expect(first.allowed).toBe(true)
    await store.release('k', slots, first.results[1]!.lease!)
    expect((await store.take('k', [daily, slots], 1)).allowed).toBe(true)
    expect((await store.take('k', [daily], 1)).allowed).toBe(false)
    expect(failures).toEqual([])
  })
})
