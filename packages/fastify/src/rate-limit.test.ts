import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import { ManualClock } from '@sluice/core'
import { gate, start, until, watchWarnings } from '@sluice/http/testing'
import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { bulkhead } from './bulkhead'
import { keys, memoryStore } from './index'
import { rateLimit } from './rate-limit'

describe('rateLimit (fastify)', () => {
  it('is a named onRequest hook with handles on its state', async () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const hook = rateLimit({ limit: 2, window: '1m', key: keys.global(), clock, store })
    expect(hook.name).toBe('rateLimit')
    expect(hook.store).toBe(store)
    expect(hook.policies.map((p) => p.name)).toEqual(['2-per-1m'])
    const app = Fastify()
    app.get('/', { onRequest: hook }, async (request) => ({
      remaining: request.rateLimit?.remaining,
    }))
    expect((await app.inject('/')).json()).toEqual({ remaining: 1 })
    expect(await hook.get('global')).toEqual([
      { policy: '2-per-1m', limit: 2, remaining: 1, resetMs: 66_000 },
    ])
    await app.inject('/')
    expect((await app.inject('/')).statusCode).toBe(429)
    await hook.resetKey('global')
    expect((await app.inject('/')).statusCode).toBe(200)
    await app.close()
  })

  it('keyFor(request) is the key the store holds (tag, IPv6 subnet), which get and resetKey take', async () => {
    const hook = rateLimit({
      limit: 1,
      window: '1m',
      key: keys.first(keys.header('x-api-key'), keys.ip()),
      clock: new ManualClock(),
    })
    const app = Fastify()
    app.get('/', { onRequest: hook }, async (request) => ({
      keyFor: await hook.keyFor(request),
      decided: request.rateLimit?.key,
    }))
    const first = (await app.inject({ url: '/', remoteAddress: '2001:db8:1:2::5' })).json()
    expect(first.keyFor).toBe(first.decided)
    expect(first.keyFor).not.toContain('2001:db8:1:2::5')
    expect((await hook.get(first.keyFor))[0]?.remaining).toBe(0)
    expect((await app.inject({ url: '/', remoteAddress: '2001:db8:1:3::9' })).statusCode).toBe(429)
    await hook.resetKey(first.keyFor)
    expect((await app.inject({ url: '/', remoteAddress: '2001:db8:1:2::5' })).statusCode).toBe(200)
  })

  it('onLimited answers a refusal with the headers already set', async () => {
    const app = Fastify()
    app.addHook(
      'onRequest',
      rateLimit({
        algorithm: 'fixed-window',
        limit: 1,
        window: '10s',
        clock: new ManualClock(),
        onLimited: (_request, reply, decision) =>
          reply
            .code(418)
            .send({ policy: decision.policy, retryIn: reply.getHeader('retry-after') }),
      }),
    )
    app.get('/', async () => 'ok')
    await app.inject('/')
    const refused = await app.inject('/')
    expect([refused.statusCode, refused.json()]).toEqual([
      418,
      { policy: '1-per-10s-fixed-window', retryIn: '10' },
    ])
  })

  it('reads the route pattern and the proxy-aware request.ip', async () => {
    const app = Fastify({ trustProxy: true })
    app.get(
      '/users/:id',
      { onRequest: rateLimit({ limit: 5, key: keys.compose(keys.route(), keys.ip()) }) },
      async (request) => ({ key: request.rateLimit?.key }),
    )
    const res = await app.inject({
      url: '/users/42',
      headers: { 'x-forwarded-for': '203.0.113.9' },
    })
    expect(res.json()).toEqual({ key: 'GET /users/:id\u001f203.0.113.9' })
  })

  it('refuses unknown options with a hint, @fastify/rate-limit names included', () => {
    expect(() => rateLimit({ timeWindow: 1000 } as never)).toThrow(
      new TypeError('rateLimit: unknown option "timeWindow" (use "window")'),
    )
    expect(() => rateLimit({ ban: 3 } as never)).toThrow(
      new TypeError('rateLimit: unknown option "ban" (use block: { for, after })'),
    )
    expect(() => bulkhead({ max: 2 ** 60 })).toThrow(
      new RangeError(`bulkhead: "max" must be a positive integer, got ${2 ** 60}`),
    )
  })
})

describe('validate (fastify)', () => {
  /** The codes of the warnings `run` gives, with the app it builds closed after. */
  async function warningsWhile(run: () => Promise<{ close(): Promise<unknown> }>) {
    const watch = watchWarnings()
    try {
      await (await run()).close()
      return watch.given.map(([code]) => code)
    } finally {
      watch.stop()
    }
  }

  it('warns once when trustProxy is true: every client could pick its key', async () => {
    const codes = await warningsWhile(async () => {
      const app = Fastify({ trustProxy: true })
      app.get('/', { onRequest: rateLimit({ limit: 100 }) }, async () => 'ok')
      for (let i = 0; i < 2; i++) {
        await app.inject({ url: '/', headers: { 'x-forwarded-for': '203.0.113.9' } })
      }
      return app
    })
    expect(codes).toEqual(['ERR_SLUICE_PERMISSIVE_TRUST_PROXY'])
  })

  it('warns once when trustProxy is on but 100 requests came without a proxy header', async () => {
    const app = Fastify({ trustProxy: '127.0.0.1' })
    app.get('/', { onRequest: rateLimit({ limit: 1000 }) }, async () => 'ok')
    const before = await warningsWhile(async () => {
      for (let i = 0; i < 99; i++) await app.inject('/')
      return { close: async () => {} }
    })
    const after = await warningsWhile(async () => {
      await app.inject('/')
      await app.inject('/')
      return app
    })
    expect([before, after]).toEqual([[], ['ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY']])
  })

  it('can be switched off one by one, or all at once; unknown checks are refused', async () => {
    const codes = await warningsWhile(async () => {
      const app = Fastify({ trustProxy: true })
      const quiet = rateLimit({ limit: 100, validate: { trustProxy: false } })
      app.get('/a', { onRequest: quiet }, async () => 'a')
      app.get('/b', { onRequest: rateLimit({ limit: 100, validate: false }) }, async () => 'b')
      await app.inject('/a')
      await app.inject('/b')
      return app
    })
    expect(codes).toEqual([])
    expect(() => rateLimit({ validate: { proxy: false } as never })).toThrow(
      new TypeError(
        'rateLimit: unknown check "validate.proxy" (known: xForwardedFor, trustProxy, proxyHeader)',
      ),
    )
  })
})

describe('bulkhead (fastify)', () => {
  it("holds the slot of a client that left until the handler's promise settles", async () => {
    const store = memoryStore()
    const work = gate()
    const app = Fastify()
    // The handler stops once its client is gone and answers nothing: only its promise says
    // it is done.
    app.get('/', { onRequest: bulkhead({ max: 1, store }) }, async (request) => {
      await work.enter(request.bulkhead?.signal)
      return undefined
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const server = { port: (app.server.address() as AddressInfo).port, close: async () => {} }
      const quitter = start(server, '/')
      await until(() => work.arrived === 1, 'the handler runs')
      quitter.abort()
      await until(() => work.signals[0]?.aborted === true, 'the handler was told')
      expect(store.inFlight).toBe(1)
      work.open()
      await until(() => store.inFlight === 0, 'the slot is freed once the handler is done')
    } finally {
      app.server.closeAllConnections()
      await app.close()
    }
  })

  it('frees the slot at once when the client leaves a stream the handler has returned', async () => {
    const store = memoryStore()
    const app = Fastify()
    app.get('/', { onRequest: bulkhead({ max: 1, store }) }, async (_request, reply) => {
      const body = new PassThrough()
      body.write('first\n')
      return reply.type('text/plain').send(body)
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const server = { port: (app.server.address() as AddressInfo).port, close: async () => {} }
      const reader = start(server, '/')
      await reader.firstByte
      expect(store.inFlight).toBe(1)
      reader.abort()
      await until(() => store.inFlight === 0, 'the slot is freed')
    } finally {
      app.server.closeAllConnections()
      await app.close()
    }
  })
})
