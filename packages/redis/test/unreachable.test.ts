import { Redis } from 'ioredis'
import { afterEach, expect, it, vi } from 'vitest'
import { RedisStoreError, redisStore } from '../src/index'
import { DAY, describeRedis, policy, uniquePrefix, until } from './helpers'
import { freePort, type RedisServer, startRedisServer } from './redis-server'

const limit = policy.fixedWindow('p', { limit: 5, window: DAY })
const help = 'https://github.com/sluice-js/sluice/blob/main/docs/warnings/ERR_SLUICE_REDIS_DOWN.md'

const clients: Redis[] = []
const servers: RedisServer[] = []
afterEach(async () => {
  for (const client of clients.splice(0)) client.disconnect()
  await Promise.all(servers.splice(0).map((server) => server.stop()))
  vi.restoreAllMocks()
})

/** A client to a port where nothing listens, as a service whose Redis is not up yet has. */
function clientOf(port: number): Redis {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    enableOfflineQueue: false,
    retryStrategy: () => 50,
  })
  // ioredis reports every failed reconnect as an 'error' event; the store reports failures.
  client.on('error', () => {})
  clients.push(client)
  return client
}

describeRedis('a store whose Redis cannot be reached at boot', () => {
  it('warns with the address, the cause and what it answers meanwhile', async () => {
    const port = await freePort()
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const store = redisStore({
      client: clientOf(port),
      prefix: uniquePrefix(),
      timeout: '200ms',
      probeInterval: '50ms',
    })
    // onError 'local' (the default): counted in this process meanwhile.
    expect((await store.take('k', [limit], 1)).allowed).toBe(true)
    await until(() => warnings.mock.calls.length > 0, 'the outage was reported')
    expect(warnings.mock.calls).toEqual([
      [
        `redisStore: cannot reach Redis at 127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port} (ERR_SLUICE_REDIS); answering with onError 'local' until it answers again (see ${help})`,
        { type: 'SluiceWarning', code: 'ERR_SLUICE_REDIS_DOWN' },
      ],
    ])
  })

  it("hands onFailure the same, with ioredis's error as the cause, and recovers once Redis is up", async () => {
    const port = await freePort()
    const failures: RedisStoreError[] = []
    const store = redisStore({
      client: clientOf(port),
      prefix: uniquePrefix(),
      timeout: '200ms',
      probeInterval: '50ms',
      onError: 'deny',
      onFailure: (error) => failures.push(error),
      onRecovery: () => {},
    })
    expect((await store.take('k', [limit], 1)).allowed).toBe(false)
    await until(() => failures.length > 0, 'the outage was reported')
    expect(failures.map((error) => [error.code, error.message])).toEqual([
      [
        'ERR_SLUICE_REDIS',
        `redisStore: cannot reach Redis at 127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
      ],
    ])
    expect(failures[0]).toBeInstanceOf(RedisStoreError)
    expect((failures[0]?.cause as Error | undefined)?.message).toBe(
      "Stream isn't writeable and enableOfflineQueue options is false",
    )
    // The address was the right one: a server started there is found.
    servers.push(await startRedisServer({ port }))
    await until(() => store.status === 'up', 'the store found Redis')
    expect((await store.take('k', [limit], 1)).allowed).toBe(true)
  })

  it('says so when its client was closed', async () => {
    const server = await startRedisServer()
    servers.push(server)
    const client = clientOf(server.port)
    const failures: RedisStoreError[] = []
    const store = redisStore({
      client,
      prefix: uniquePrefix(),
      timeout: '200ms',
      probeInterval: '50ms',
      onFailure: (error) => failures.push(error),
    })
    expect((await store.take('k', [limit], 1)).allowed).toBe(true)
    await client.quit()
    await store.take('k', [limit], 1)
    await until(() => failures.length > 0, 'the outage was reported')
    expect(failures.map((error) => error.message)).toEqual([
      `redisStore: the client for Redis at 127.0.0.1:${server.port} was closed (quit or disconnect)`,
    ])
  })
})
