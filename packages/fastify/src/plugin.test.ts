import type { AddressInfo } from 'node:net'
import { ManualClock } from '@sluice/core'
import { gate, send, start, until } from '@sluice/http/testing'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { type HeaderMode, keys, memoryStore, type RateLimitOptions } from './index'
import { fastifyBulkhead, fastifyRateLimit } from './plugin'
import { rateLimit } from './rate-limit'

/** Status, body and every header but `date` of each of the answers to `urls`. */
async function answers(app: FastifyInstance, urls: string[]) {
  const seen: LightMyRequestResponse[] = []
  for (const url of urls) seen.push(await app.inject(url))
  return seen.map(({ statusCode, body, headers: { date: _, ...headers } }) => ({
    statusCode,
    body,
    headers,
  }))
}

/** What a refused and an admitted answer look like, as a pair of statuses. */
const statuses = async (app: FastifyInstance, urls: string[]) =>
  (await answers(app, urls)).map((answer) => answer.statusCode)

describe('fastifyRateLimit', () => {
  it.each<HeaderMode>(['draft-8', 'draft-7', 'draft-6', 'legacy'])(
    'answers as the hook does, headers included (%s)',
    async (headers) => {
      const options = { limit: 2, window: '1m', headers, key: keys.global() } as const
      const hooked = Fastify()
      hooked.addHook('onRequest', rateLimit({ ...options, clock: new ManualClock() }))
      hooked.get('/', async (request) => ({ remaining: request.rateLimit?.remaining }))
      const plugged = Fastify()
      await plugged.register(fastifyRateLimit, { ...options, clock: new ManualClock() })
      plugged.get('/', async (request) => ({ remaining: request.rateLimit?.remaining }))
      const urls = ['/', '/', '/']
      const expected = await answers(hooked, urls)
      expect(expected.map((answer) => answer.statusCode)).toEqual([200, 200, 429])
      expect(await answers(plugged, urls)).toEqual(expected)
    },
  )

  it('gives every route after it one budget; routes before it and 404s are not covered', async () => {
    const app = Fastify()
    app.get('/before', async () => 'free')
    await app.register(fastifyRateLimit, { limit: 2, window: '1m' })
    app.get('/a', async () => 'a')
    app.get('/b', async () => 'b')
    expect(await statuses(app, ['/a', '/b', '/a', '/b', '/before', '/missing'])).toEqual([
      200, 200, 429, 429, 200, 404,
    ])
    // A hook added with addHook covers the context's 404 answers too.
    const hooked = Fastify()
    hooked.addHook('onRequest', rateLimit({ limit: 1, window: '1m' }))
    expect(await statuses(hooked, ['/missing', '/missing'])).toEqual([404, 429])
  })

  it("takes the hook's defaults when registered without options", async () => {
    const app = Fastify()
    await app.register(fastifyRateLimit)
    app.get('/', async () => 'ok')
    const [first] = await answers(app, ['/'])
    expect(first?.headers['ratelimit-policy']).toBe('"100-per-1m";q=100;w=60')
  })

  it('is encapsulated: registered in a scope, it covers that scope and its children only', async () => {
    const app = Fastify()
    await app.register(async (limited) => {
      await limited.register(fastifyRateLimit, { limit: 1, window: '1m' })
      limited.get('/limited', async () => 'limited')
      await limited.register(async (child) => {
        child.get('/child', async () => 'child')
      })
    })
    await app.register(async (sibling) => {
      sibling.get('/sibling', async () => 'sibling')
    })
    app.get('/root', async () => 'root')
    expect(await statuses(app, ['/limited', '/child', '/limited'])).toEqual([200, 429, 429])
    const free = await answers(app, ['/sibling', '/sibling', '/root', '/root'])
    expect(free.map((answer) => answer.statusCode)).toEqual([200, 200, 200, 200])
    expect(free.filter((answer) => 'ratelimit' in answer.headers)).toEqual([])
  })

  it('lets a route opt out with config: { rateLimit: false }', async () => {
    const app = Fastify()
    await app.register(fastifyRateLimit, { limit: 1, window: '1m' })
    app.get('/', async () => 'ok')
    app.get('/health', { config: { rateLimit: false } }, async () => 'up')
    const health = await answers(app, ['/', '/', '/health', '/health'])
    expect(health.map((answer) => answer.statusCode)).toEqual([200, 429, 200, 200])
    expect(health[2]?.headers).not.toHaveProperty('ratelimit')
    expect(health[2]?.headers).not.toHaveProperty('ratelimit-policy')
  })

  it("merges a route's config: { rateLimit } over the plugin's options, with a budget of its own", async () => {
    const app = Fastify()
    await app.register(fastifyRateLimit, {
      algorithm: 'fixed-window',
      limit: 3,
      window: '10m',
      headers: 'legacy',
      clock: new ManualClock(),
    })
    app.get('/', async () => 'ok')
    // `limit` is the route's; `algorithm`, `window`, `headers` and `clock` are the plugin's.
    app.get('/strict', { config: { rateLimit: { limit: 1 } } }, async () => 'strict')
    const [strict, refused] = await answers(app, ['/strict', '/strict'])
    expect(strict?.headers).toMatchObject({ 'x-ratelimit-limit': '1', 'x-ratelimit-reset': '600' })
    expect(refused?.statusCode).toBe(429)
    expect(await statuses(app, ['/', '/', '/', '/'])).toEqual([200, 200, 200, 429])
  })

  it("drops the plugin's policies for a route's limit, and its limit for a route's policies", async () => {
    const several = Fastify()
    await several.register(fastifyRateLimit, {
      policies: [
        { name: 'burst', limit: 5, window: '1s' },
        { name: 'hour', limit: 100, window: '1h' },
      ],
    })
    several.get('/', async () => 'ok')
    several.get('/one', { config: { rateLimit: { limit: 1, window: '1m' } } }, async () => 'one')
    const single = Fastify()
    await single.register(fastifyRateLimit, { limit: 1, window: '1m', headers: 'draft-7' })
    single.get('/two', { config: { rateLimit: { policies: [{ limit: 2, window: '1m' }] } } }, () =>
      Promise.resolve('two'),
    )
    const [all, one] = await answers(several, ['/', '/one'])
    expect(all?.headers['ratelimit-policy']).toBe('"burst";q=5;w=1, "hour";q=100;w=3600')
    expect(one?.headers['ratelimit-policy']).toBe('"1-per-1m";q=1;w=60')
    const [two] = await answers(single, ['/two'])
    expect(two?.headers['ratelimit-policy']).toBe('2;w=60')
  })

  it('gives routes handed the same options object one limiter, as groupId does', async () => {
    const app = Fastify()
    await app.register(fastifyRateLimit, { limit: 100 })
    const search: RateLimitOptions = { name: 'search', limit: 2, window: '1m' }
    app.get('/search/users', { config: { rateLimit: search } }, async () => [])
    app.get('/search/orders', { config: { rateLimit: search } }, async () => [])
    expect(await statuses(app, ['/search/users', '/search/orders', '/search/users'])).toEqual([
      200, 200, 429,
    ])
  })

  it('counts a GET route and its HEAD route once each, on one budget', async () => {
    const app = Fastify()
    await app.register(fastifyRateLimit, {
      algorithm: 'fixed-window',
      limit: 3,
      window: '1m',
      key: keys.global(),
      clock: new ManualClock(),
    })
    app.get('/', { config: { rateLimit: { limit: 2 } } }, async () => 'ok')
    const head = await app.inject({ method: 'HEAD', url: '/' })
    expect(head.headers.ratelimit).toBe('"2-per-1m-fixed-window";r=1;t=60')
    expect((await app.inject('/')).headers.ratelimit).toBe('"2-per-1m-fixed-window";r=0;t=60')
    expect((await app.inject({ method: 'HEAD', url: '/' })).statusCode).toBe(429)
  })

  it("leaves Fastify's own register options (prefix, logLevel) to Fastify", async () => {
    const app = Fastify()
    await app.register(fastifyRateLimit, {
      limit: 1,
      window: '1m',
      prefix: '/v1',
      logLevel: 'warn',
    })
    app.get('/', async () => 'ok')
    expect(await statuses(app, ['/', '/'])).toEqual([200, 429])
  })

  it('refuses bad options when registered, and a bad route config when the route is added', async () => {
    const app = Fastify()
    await expect(app.register(fastifyRateLimit, { max: 5 } as never)).rejects.toThrow(
      new TypeError('rateLimit: unknown option "max" (use "limit")'),
    )
    const other = Fastify()
    await other.register(fastifyRateLimit, { limit: 5 })
    expect(() =>
      other.get('/', { config: { rateLimit: true as never } }, async () => 'ok'),
    ).toThrow(
      new TypeError(
        'fastifyRateLimit: route GET /: "config.rateLimit" must be an options object or false, got true',
      ),
    )
    expect(() =>
      other.get('/x', { config: { rateLimit: { limit: 0 } } }, async () => 'ok'),
    ).toThrow(/rateLimit: "limit" must be a positive integer, got 0/)
  })
})

describe('fastifyBulkhead', () => {
  it('shares one bulkhead, with per-route override and opt-out, over real sockets', async () => {
    const store = memoryStore()
    const work = gate()
    const app = Fastify()
    await app.register(fastifyBulkhead, { max: 1, maxQueue: 0, store })
    const hold = async (request: { bulkhead?: { signal: AbortSignal } }) => {
      await work.enter(request.bulkhead?.signal)
      return 'done'
    }
    app.get('/slow', hold)
    app.get('/other', async () => 'other')
    app.get('/free', { config: { bulkhead: false } }, async (request) => ({
      bulkhead: request.bulkhead ?? null,
    }))
    app.get('/wide', { config: { bulkhead: { max: 2, store: memoryStore() } } }, hold)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const server = { port: (app.server.address() as AddressInfo).port, close: async () => {} }
    try {
      const slow = start(server, '/slow')
      await until(() => work.arrived === 1, 'the first request holds the shared slot')
      const full = await send(server, '/other')
      expect([full.status, Number(full.headers['retry-after']) > 0]).toEqual([503, true])
      const free = await send(server, '/free')
      expect([free.status, JSON.parse(free.body)]).toEqual([200, { bulkhead: null }])
      const wide = [start(server, '/wide'), start(server, '/wide')]
      await until(() => work.arrived === 3, 'the wide route has two slots of its own')
      work.open()
      const done = await Promise.all([slow, ...wide].map((request) => request.replied))
      expect(done.map((reply) => [reply.status, reply.body])).toEqual([
        [200, 'done'],
        [200, 'done'],
        [200, 'done'],
      ])
      await until(() => store.inFlight === 0, 'the shared slot is freed')
    } finally {
      app.server.closeAllConnections()
      await app.close()
    }
  })
})
