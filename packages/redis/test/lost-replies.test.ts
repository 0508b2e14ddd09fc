import { Redis } from 'ioredis'
import { afterEach, expect, it } from 'vitest'
import { type RedisStoreError, redisStore } from '../src/index'
import { GENERAL } from '../src/scripts'
import { connect, DAY, describeRedis, policy, redisPort, uniquePrefix } from './helpers'
import { type ReplyDroppingProxy, replyDroppingProxy } from './reply-dropping-proxy'

// Issue 24 item 2: the connection drops after Redis ran a take, before its reply reached
// the client. ioredis sends the command again once it has reconnected
// (autoResendUnfulfilledCommands), with the same lease id: that take must be admitted
// (the slot it took is its own), not refused and left holding the slot for leaseTtl.

const proxies: ReplyDroppingProxy[] = []
const clients: Redis[] = []
afterEach(async () => {
  for (const client of clients.splice(0)) client.disconnect()
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()))
})

describeRedis('a take whose reply is lost (standalone)', () => {
  it('is admitted when the client sends it again, and holds one slot, released once', async () => {
    const proxy = await replyDroppingProxy(redisPort!)
    proxies.push(proxy)
    const client = new Redis({ host: '127.0.0.1', port: proxy.port, enableOfflineQueue: false })
    client.on('error', () => {})
    clients.push(client)
    const failures: RedisStoreError[] = []
    const store = redisStore({
      client,
      prefix: uniquePrefix(),
      timeout: 5_000,
      onError: 'deny',
      onFailure: (error) => failures.push(error),
    })
    const slot = policy.concurrency('slot', 1)
    const daily = policy.fixedWindow('daily', { limit: 10, window: DAY })
    // Loaded, so that the take runs at once (a NOSCRIPT would make it an EVAL).
    await connect().script('LOAD', GENERAL.source)
    const lost = proxy.dropReplyTo(GENERAL.sha)
    const taken = await store.take('k', [slot, daily], 1)
    await lost
    expect(proxy.dropped).toBe(1)
    expect(taken.allowed).toBe(true)
    // Counted once, though Redis ran it twice.
    expect((await store.get('k', [slot, daily])).map((r) => r.remaining)).toEqual([0, 9])
    await store.release('k', slot, taken.results[0]!.lease!)
    expect((await store.take('k', [slot], 1)).allowed).toBe(true)
    expect(failures).toEqual([])
  })
})
