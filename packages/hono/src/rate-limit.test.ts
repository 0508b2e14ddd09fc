import { ManualClock } from '@sluice/core'
import { type Decision, keys, memoryStore, type Store } from '@sluice/http'
import { forgetWarnings, until } from '@sluice/http/testing'
import { type Context, Hono } from 'hono'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { bulkhead } from './bulkhead'
import { rateLimit } from './rate-limit'
import type { RateLimitEnv } from './variables'

const manual = () => {
  const clock = new ManualClock()
  return { clock, store: memoryStore({ clock }) }
}

/** The client address as a test sets it; app.request() has no socket. */
const byHeader = (c: Context) => c.req.header('x-client')

const ok = (c: Context) => c.json({ remaining: c.get('rateLimit')?.remaining ?? null })

beforeEach(() => {
  forgetWarnings()
})

afterEach(() => {
  vi.restoreAllMocks()
})

describe('rateLimit (hono)', () => {
  it('returns a named middleware with handles on its state', async () => {
    const { clock, store } = manual()
    const limiter = rateLimit({
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
      key: keys.global(),
      clock,
      store,
    })
    expect(limiter.name).toBe('rateLimit')
    expect(limiter.store).toBe(store)
    expect(limiter.policies.map((p) => p.name)).toEqual(['2-per-1m-fixed-window'])
    const app = new Hono().get('/', limiter, ok)
    expect(await (await app.request('/')).json()).toEqual({ remaining: 1 })
    await app.request('/')
    const refused = await app.request('/')
    expect([
      refused.status,
      await refused.text(),
      refused.headers.get('content-type'),
      refused.headers.get('ratelimit'),
    ]).toEqual([
      429,
      'Too Many Requests',
      'text/plain; charset=utf-8',
      '"2-per-1m-fixed-window";r=0;t=60',
    ])
    await limiter.resetKey('global')
    expect((await app.request('/')).status).toBe(200)
  })

  it('limits the routes after app.use, on a sub-app, or on one route', async () => {
    const { clock, store } = manual()
    const api = new Hono()
      .use(rateLimit({ name: 'api', limit: 1, window: '1m', getIp: byHeader, clock, store }))
      .get('/items', ok)
    const app = new Hono()
      .route('/api', api)
      .get(
        '/one',
        rateLimit({ name: 'one', limit: 1, window: '1m', getIp: byHeader, clock, store }),
        ok,
      )
      .get('/free', ok)
    const as = { headers: { 'x-client': '203.0.113.1' } }
    expect((await app.request('/api/items', as)).status).toBe(200)
    expect((await app.request('/api/items', as)).status).toBe(429)
    expect((await app.request('/one', as)).status).toBe(200)
    expect((await app.request('/one', as)).status).toBe(429)
    const free = await app.request('/free', as)
    expect([free.status, free.headers.get('ratelimit')]).toEqual([200, null])
  })

  it('keys.route() sees the route pattern, even from application-level middleware', async () => {
    const { clock, store } = manual()
    // A sub-app declares the variable its parent's middleware sets.
    const users = new Hono<RateLimitEnv>()
      .get('/me', (c) => c.text('me'))
      .get('/:id', (c) => c.json({ key: c.get('rateLimit')?.key }))
    const app = new Hono()
      .use(
        rateLimit({
          algorithm: 'fixed-window',
          limit: 5,
          window: '1m',
          key: keys.route(),
          clock,
          store,
        }),
      )
      .route('/v1/users', users)
    expect(await (await app.request('/v1/users/42')).json()).toEqual({
      key: 'GET /v1/users/:id',
    })
    // An unmatched path has no route: the path stands in.
    const missing = await app.request('/nowhere')
    expect([missing.status, missing.headers.get('ratelimit')]).toEqual([
      404,
      '"5-per-1m-fixed-window";r=4;t=60',
    ])
    expect(store.size).toBe(2)
  })

  it('reads the client address from getIp, normalised like every adapter', async () => {
    const { clock, store } = manual()
    const app = new Hono().get(
      '/',
      rateLimit({
        limit: 1,
        window: '1m',
        getIp: (c) => c.req.header('cf-connecting-ip'),
        clock,
        store,
      }),
      (c) => c.json({ key: c.get('rateLimit')?.key }),
    )
    const from = (ip: string) => ({ headers: { 'cf-connecting-ip': ip } })
    expect(await (await app.request('/', from('2001:db8:0:1ff::1'))).json()).toEqual({
      key: '2001:db8:0:100::/56',
    })
    expect((await app.request('/', from('2001:db8:0:100::9'))).status).toBe(429)
    expect((await app.request('/', from('::ffff:203.0.113.7'))).status).toBe(200)
    expect((await app.request('/', from('203.0.113.7'))).status).toBe(429)
  })

  it('onLimited answers refusals, with headers and Retry-After already set', async () => {
    const { clock, store } = manual()
    const seen: Decision[] = []
    const app = new Hono().get(
      '/',
      rateLimit({
        limit: 1,
        window: '10s',
        algorithm: 'fixed-window',
        key: keys.global(),
        clock,
        store,
        onLimited: (c, _next, decision) => {
          seen.push(decision)
          return c.json(
            { retryIn: c.res.headers.get('Retry-After'), same: c.get('rateLimit') === decision },
            429,
          )
        },
      }),
      ok,
    )
    await app.request('/')
    const refused = await app.request('/')
    expect([refused.status, await refused.json()]).toEqual([429, { retryIn: '10', same: true }])
    expect(refused.headers.get('ratelimit')).toBe('"1-per-10s-fixed-window";r=0;t=10')
    expect(seen.map((d) => [d.allowed, d.retryAfterMs])).toEqual([[false, 10_000]])
  })

  it('puts its headers on a Response the handler or onLimited builds by hand', async () => {
    const { clock, store } = manual()
    const app = new Hono().get(
      '/',
      rateLimit({
        algorithm: 'fixed-window',
        limit: 1,
        window: '1m',
        key: keys.global(),
        clock,
        store,
        onLimited: () => new Response('slow down', { status: 429 }),
      }),
      () => new Response('raw'),
    )
    const admitted = await app.request('/')
    expect([await admitted.text(), admitted.headers.get('ratelimit')]).toEqual([
      'raw',
      '"1-per-1m-fixed-window";r=0;t=60',
    ])
    const refused = await app.request('/')
    expect([
      refused.status,
      await refused.text(),
      refused.headers.get('ratelimit-policy'),
      refused.headers.get('retry-after'),
    ]).toEqual([429, 'slow down', '"1-per-1m-fixed-window";q=1;w=60', '60'])
  })

  it('onLimited may let a refused request through (a dry run)', async () => {
    const { clock, store } = manual()
    const refusedKeys: string[] = []
    const app = new Hono().get(
      '/',
      rateLimit({
        algorithm: 'fixed-window',
        limit: 1,
        window: '1m',
        key: keys.global(),
        clock,
        store,
        onLimited: async (_c, next, decision) => {
          refusedKeys.push(decision.key)
          await next()
        },
      }),
      ok,
    )
    expect((await app.request('/')).status).toBe(200)
    const through = await app.request('/')
    expect([through.status, through.headers.get('retry-after')]).toEqual([200, '60'])
    expect(refusedKeys).toEqual(['global'])
  })

  it('refundWhen reads the status the handler answered with', async () => {
    const { clock, store } = manual()
    const app = new Hono()
      .use(
        rateLimit({
          limit: 2,
          window: '1m',
          key: keys.global(),
          refundWhen: (c) => c.res.status < 400,
          clock,
          store,
        }),
      )
      .get('/ok', ok)
      .get('/fail', (c) => c.json({ error: true }, 500))
    // The refund comes once the response is over: its body has been read.
    const status = async (path: string) => {
      const res = await app.request(path)
      await res.text()
      return res.status
    }
    for (let i = 0; i < 5; i++) expect(await status('/ok')).toBe(200)
    expect(await status('/fail')).toBe(500)
    expect(await status('/fail')).toBe(500)
    expect(await status('/ok')).toBe(429)
  })

  it('a client that leaves while its request waits gets 499 and leaves the queue', async () => {
    const { clock, store } = manual()
    const app = new Hono().get(
      '/',
      rateLimit({
        algorithm: 'fixed-window',
        limit: 1,
        window: '1s',
        key: keys.global(),
        wait: { timeout: '5s', maxQueue: 1 },
        clock,
        store,
      }),
      ok,
    )
    expect((await app.request('/')).status).toBe(200)
    const client = new AbortController()
    const waiting = app.request('/', { signal: client.signal })
    await until(() => clock.pendingSleeps === 1, 'the request waits')
    client.abort()
    expect((await waiting).status).toBe(499)
    expect(clock.pendingSleeps).toBe(0)
  })

  it('hands a failing key extractor or cost to Hono error handling', async () => {
    const errors: string[] = []
    const app = new Hono()
      .get(
        '/key',
        rateLimit({
          key: () => {
            throw new Error('no key today')
          },
        }),
        ok,
      )
      .get('/cost', rateLimit({ cost: () => 0, getIp: byHeader }), ok)
      .onError((error, c) => {
        errors.push(error.message)
        return c.text('failed', 500)
      })
    expect((await app.request('/key')).status).toBe(500)
    expect((await app.request('/cost')).status).toBe(500)
    expect(errors).toEqual([
      'rateLimit: the "key" function failed: no key today',
      'rateLimit: "cost" must return a positive integer or { [policyName]: number }, got 0',
    ])
  })

  it('reports a failing refund as a warning instead of failing the request', async () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const app = new Hono().get(
      '/',
      rateLimit({
        limit: 5,
        key: keys.global(),
        refundWhen: async () => {
          throw new Error('refund store down')
        },
      }),
      ok,
    )
    const res = await app.request('/')
    expect([res.status, await res.json()]).toEqual([200, { remaining: 4 }])
    await vi.waitFor(() => expect(spy).toHaveBeenCalledTimes(1))
    expect(spy.mock.calls[0]).toEqual([
      'rateLimit: refundWhen or store.refund failed after the response: Error: refund store down (see https://github.com/sluice-js/sluice/blob/main/docs/warnings/ERR_SLUICE_REFUND_FAILED.md)',
      { type: 'SluiceWarning', code: 'ERR_SLUICE_REFUND_FAILED' },
    ])
  })

  it('works with an asynchronous store', async () => {
    const { clock, store } = manual()
    const slow: Store = {
      take: async (...args) => store.take(...args),
      refund: async (...args) => store.refund(...args),
      force: async (...args) => store.force(...args),
      block: async (...args) => store.block(...args),
      release: async (...args) => store.release(...args),
      get: async (...args) => store.get(...args),
      reset: async (...args) => store.reset(...args),
      resetAll: async () => store.resetAll(),
    }
    const app = new Hono().get(
      '/',
      rateLimit({ limit: 1, window: '1m', key: keys.global(), clock, store: slow }),
      ok,
    )
    const first = await app.request('/')
    expect([first.status, await first.json()]).toEqual([200, { remaining: 0 }])
    expect((await app.request('/')).status).toBe(429)
  })

  it('validates options at construction, naming the option', () => {
    expect(() => rateLimit({ windowMs: 60_000 } as never)).toThrow(
      new TypeError(
        `rateLimit: unknown option "windowMs" (use "window": milliseconds or a string such as '15m')`,
      ),
    )
    expect(() => rateLimit({ limit: 0 })).toThrow(
      new RangeError('rateLimit: "limit" must be a positive integer, got 0'),
    )
    expect(() => rateLimit({ getIp: 'x-real-ip' as never })).toThrow(
      new TypeError('rateLimit: "getIp" must be a function, got "x-real-ip"'),
    )
    expect(() => rateLimit({ onLimited: 'nope' as never })).toThrow(
      new TypeError('rateLimit: "onLimited" must be a function, got "nope"'),
    )
    expect(() => rateLimit({ validate: { trustProxy: false } as never })).toThrow(
      new TypeError(
        'rateLimit: unknown check "validate.trustProxy" (known: xForwardedFor, clientAddress)',
      ),
    )
  })
})

describe('one-time validations (hono)', () => {
  const warnings = () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    return () => spy.mock.calls.map(([, options]) => (options as { code: string }).code)
  }

  it('warns once when no client address can be found, and counts such requests together', async () => {
    const codes = warnings()
    const { clock, store } = manual()
    const app = new Hono().get('/', rateLimit({ limit: 1, window: '1m', clock, store }), (c) =>
      c.json({ key: c.get('rateLimit')?.key }),
    )
    // app.request() is not served by @hono/node-server: the default getIp has no socket.
    expect(await (await app.request('/')).json()).toEqual({ key: '(no key)' })
    expect((await app.request('/')).status).toBe(429)
    expect(codes()).toEqual(['ERR_SLUICE_NO_CLIENT_ADDRESS'])
  })

  it('warns once when X-Forwarded-For arrives while the address comes from the socket', async () => {
    const codes = warnings()
    const app = new Hono().get(
      '/',
      rateLimit({ limit: 100, validate: { clientAddress: false } }),
      ok,
    )
    await app.request('/')
    expect(codes()).toEqual([])
    await app.request('/', { headers: { 'x-forwarded-for': '198.51.100.1' } })
    await app.request('/', { headers: { 'x-forwarded-for': '198.51.100.2' } })
    expect(codes()).toEqual(['ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'])
  })

  it('gives the X-Forwarded-For warning once for a request that meets two middlewares', async () => {
    const codes = warnings()
    const app = new Hono().get(
      '/',
      rateLimit({ limit: 100, validate: { clientAddress: false } }),
      bulkhead({ max: 5, validate: { clientAddress: false } }),
      ok,
    )
    await app.request('/', { headers: { 'x-forwarded-for': '198.51.100.1' } })
    expect(codes()).toEqual(['ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'])
  })

  it('stays quiet once getIp is given, or when switched off', async () => {
    const codes = warnings()
    const app = new Hono()
      .get('/a', rateLimit({ limit: 100, getIp: byHeader }), ok)
      .get('/b', rateLimit({ limit: 100, validate: false }), ok)
    const xff = { headers: { 'x-forwarded-for': '198.51.100.1' } }
    await app.request('/a', xff)
    await app.request('/b', xff)
    expect(codes()).toEqual([])
  })
})
