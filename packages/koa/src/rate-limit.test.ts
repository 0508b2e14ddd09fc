import Router from '@koa/router'
import { ManualClock } from '@sluice/core'
import { type Decision, keys, memoryStore, type RateLimitInfo, type Store } from '@sluice/http'
import { forgetWarnings } from '@sluice/http/testing'
import Koa, { type Context } from 'koa'
import request from 'supertest'
import { afterEach, beforeEach, describe, expect, expectTypeOf, it, vi } from 'vitest'
import { rateLimit } from './rate-limit'

const manual = () => {
  const clock = new ManualClock()
  return { clock, store: memoryStore({ clock }) }
}

const ok = (ctx: Context) => {
  expectTypeOf(ctx.state.rateLimit).toEqualTypeOf<RateLimitInfo | undefined>()
  ctx.body = { remaining: ctx.state.rateLimit?.remaining ?? null }
}

/** A Koa app whose failures are collected instead of printed. */
const quietApp = (errors: string[] = []) => {
  const app = new Koa()
  app.on('error', (error: Error) => errors.push(error.message))
  return app
}

beforeEach(() => {
  forgetWarnings()
})

afterEach(() => {
  vi.restoreAllMocks()
})

describe('rateLimit (koa)', () => {
  it('returns a named middleware with handles on its state', async () => {
    const { clock, store } = manual()
    const limiter = rateLimit({ limit: 2, window: '1m', key: keys.global(), clock, store })
    expect(limiter.name).toBe('rateLimit')
    expect(limiter.store).toBe(store)
    expect(limiter.policies.map((p) => p.name)).toEqual(['2-per-1m'])
    const app = quietApp().use(limiter).use(ok)
    const server = app.callback()
    expect((await request(server).get('/')).body).toEqual({ remaining: 1 })
    await request(server).get('/')
    const refused = await request(server).get('/')
    expect([refused.status, refused.text, refused.headers['content-type']]).toEqual([
      429,
      'Too Many Requests',
      'text/plain; charset=utf-8',
    ])
    await limiter.resetKey('global')
    expect((await request(server).get('/')).status).toBe(200)
  })

  it('limits per route on an @koa/router router, leaving other routes free', async () => {
    const { clock, store } = manual()
    const router = new Router()
      .get('/limited', rateLimit({ limit: 1, window: '1m', clock, store }), ok)
      .get('/free', ok)
    const server = quietApp().use(router.routes()).callback()
    expect((await request(server).get('/limited')).status).toBe(200)
    expect((await request(server).get('/limited')).status).toBe(429)
    const free = await request(server).get('/free')
    expect([free.status, free.body, free.headers.ratelimit]).toEqual([
      200,
      { remaining: null },
      undefined,
    ])
  })

  it('limits everything a router serves when used on the router', async () => {
    const { clock, store } = manual()
    const api = new Router({ prefix: '/api' })
      .use(rateLimit({ limit: 1, window: '1m', clock, store }))
      .get('/items', ok)
    const server = quietApp()
      .use(api.routes())
      .use((ctx) => {
        ctx.body = 'home'
      })
      .callback()
    expect((await request(server).get('/api/items')).status).toBe(200)
    expect((await request(server).get('/api/items')).status).toBe(429)
    expect((await request(server).get('/health')).status).toBe(200)
  })

  it('keys.route() sees the pattern of the route @koa/router matched, with its prefix', async () => {
    const { clock, store } = manual()
    const router = new Router({ prefix: '/v1' })
      .get('/users/me', (ctx) => {
        ctx.body = 'me'
      })
      .get(
        '/users/:id',
        rateLimit({ limit: 5, window: '1m', key: keys.route(), clock, store }),
        (ctx) => {
          ctx.body = { key: ctx.state.rateLimit?.key }
        },
      )
      .post('/users/:id', (ctx) => {
        ctx.body = 'posted'
      })
    const app = quietApp()
      // Before the router has matched, the path stands in for the pattern.
      .use(rateLimit({ name: 'app', limit: 5, window: '1m', key: keys.route(), clock, store }))
      .use(async (ctx, next) => {
        const appKey = ctx.state.rateLimit?.key
        await next()
        ctx.set('x-app-key', String(appKey))
      })
      .use(router.routes())
    const res = await request(app.callback()).get('/v1/users/42')
    expect(res.body).toEqual({ key: 'GET /v1/users/:id' })
    expect(res.headers['x-app-key']).toBe('GET /v1/users/42')
  })

  it('reads ctx.ip, so app.proxy and app.maxIpsCount decide the client address', async () => {
    const { clock, store } = manual()
    const app = quietApp()
    app.proxy = true
    app.maxIpsCount = 1
    app.use(rateLimit({ limit: 1, window: '1m', clock, store })).use((ctx) => {
      ctx.body = { key: ctx.state.rateLimit?.key }
    })
    const server = app.callback()
    // Only the address the one trusted proxy saw counts; what the client claims does not.
    const first = await request(server).get('/').set('X-Forwarded-For', '198.51.100.9, 203.0.113.5')
    expect(first.body).toEqual({ key: '203.0.113.5' })
    const spoofed = await request(server)
      .get('/')
      .set('X-Forwarded-For', '198.51.100.10, 203.0.113.5')
    expect(spoofed.status).toBe(429)
  })

  it('onLimited answers refusals, with headers and Retry-After already set', async () => {
    const { clock, store } = manual()
    const seen: Decision[] = []
    const app = quietApp()
      .use(
        rateLimit({
          limit: 1,
          window: '10s',
          algorithm: 'fixed-window',
          clock,
          store,
          onLimited: (ctx, _next, decision) => {
            seen.push(decision)
            ctx.status = 429
            ctx.body = {
              retryIn: ctx.response.get('Retry-After'),
              same: ctx.state.rateLimit === decision,
            }
          },
        }),
      )
      .use(ok)
    const server = app.callback()
    await request(server).get('/')
    const refused = await request(server).get('/')
    expect([refused.status, refused.body]).toEqual([429, { retryIn: '10', same: true }])
    expect(refused.headers.ratelimit).toBe('"1-per-10s-fixed-window";r=0;t=10')
    expect(seen.map((d) => [d.allowed, d.retryAfterMs])).toEqual([[false, 10_000]])
  })

  it('onLimited may let a refused request through (a dry run)', async () => {
    const { clock, store } = manual()
    const refusedKeys: string[] = []
    const app = quietApp()
      .use(
        rateLimit({
          algorithm: 'fixed-window',
          limit: 1,
          window: '1m',
          clock,
          store,
          onLimited: (_ctx, next, decision) => {
            refusedKeys.push(decision.key)
            return next()
          },
        }),
      )
      .use(ok)
    const server = app.callback()
    expect((await request(server).get('/')).status).toBe(200)
    const through = await request(server).get('/')
    expect([through.status, through.headers['retry-after']]).toEqual([200, '60'])
    expect(refusedKeys).toEqual(['127.0.0.1'])
  })

  it('hands a failing key extractor or cost to Koa error handling', async () => {
    const errors: string[] = []
    const router = new Router()
      .get(
        '/key',
        rateLimit({
          key: () => {
            throw new Error('no key today')
          },
        }),
        ok,
      )
      .get('/cost', rateLimit({ cost: () => 0 }), ok)
    const server = quietApp(errors).use(router.routes()).callback()
    expect((await request(server).get('/key')).status).toBe(500)
    expect((await request(server).get('/cost')).status).toBe(500)
    expect(errors).toEqual([
      'rateLimit: the "key" function failed: no key today',
      'rateLimit: "cost" must return a positive integer or { [policyName]: number }, got 0',
    ])
  })

  it('reports a failing refund as a warning instead of crashing', async () => {
    const { clock, store } = manual()
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const app = quietApp()
      .use(
        rateLimit({
          limit: 5,
          window: '1m',
          clock,
          store,
          validate: false,
          refundWhen: async () => {
            throw new Error('refund store down')
          },
        }),
      )
      .use(ok)
    expect((await request(app.callback()).get('/')).status).toBe(200)
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
    const server = quietApp()
      .use(rateLimit({ limit: 1, window: '1m', clock, store: slow }))
      .use(ok)
      .callback()
    const first = await request(server).get('/')
    expect([first.status, first.body.remaining]).toEqual([200, 0])
    expect((await request(server).get('/')).status).toBe(429)
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
    expect(() => rateLimit({ statusCode: 200 })).toThrow(
      new RangeError(
        'rateLimit: "statusCode" must be an HTTP status code from 400 to 599, got 200',
      ),
    )
    expect(() => rateLimit({ onLimited: 'nope' as never })).toThrow(
      new TypeError('rateLimit: "onLimited" must be a function, got "nope"'),
    )
    expect(() => rateLimit({ validate: 'yes' as never })).toThrow(
      new TypeError('rateLimit: "validate" must be a boolean or an object, got "yes"'),
    )
    expect(() => rateLimit({ validate: { proxy: false } as never })).toThrow(
      new TypeError(
        'rateLimit: unknown check "validate.proxy" (known: xForwardedFor, trustProxy, proxyHeader)',
      ),
    )
  })
})

describe('one-time validations (koa)', () => {
  const warnings = () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    return () => spy.mock.calls.map(([, options]) => (options as { code: string }).code)
  }

  it('warns once when X-Forwarded-For arrives while app.proxy is off', async () => {
    const codes = warnings()
    const server = quietApp()
      .use(rateLimit({ limit: 100 }))
      .use(ok)
      .callback()
    await request(server).get('/')
    expect(codes()).toEqual([])
    await request(server).get('/').set('X-Forwarded-For', '198.51.100.1')
    await request(server).get('/').set('X-Forwarded-For', '198.51.100.2')
    expect(codes()).toEqual(['ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'])
  })

  it('watches the header app.proxyIpHeader names', async () => {
    const codes = warnings()
    const app = new Koa({ proxyIpHeader: 'X-Real-IP' }).use(rateLimit({ limit: 100 })).use(ok)
    await request(app.callback()).get('/').set('X-Forwarded-For', '198.51.100.1')
    expect(codes()).toEqual([])
    await request(app.callback()).get('/').set('X-Real-IP', '198.51.100.1')
    expect(codes()).toEqual(['ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'])
  })

  it('stays quiet once app.proxy is on with maxIpsCount set', async () => {
    const codes = warnings()
    const app = new Koa({ proxy: true, maxIpsCount: 1 }).use(rateLimit({ limit: 100 })).use(ok)
    await request(app.callback()).get('/').set('X-Forwarded-For', '198.51.100.1')
    expect(codes()).toEqual([])
  })

  it('warns once when app.proxy trusts every X-Forwarded-For entry', async () => {
    const codes = warnings()
    const app = new Koa({ proxy: true }).use(rateLimit({ limit: 100 })).use(ok)
    await request(app.callback()).get('/')
    await request(app.callback()).get('/')
    expect(codes()).toEqual(['ERR_SLUICE_PERMISSIVE_TRUST_PROXY'])
  })

  it('can be switched off one by one, or all at once', async () => {
    const codes = warnings()
    const router = new Router()
      .get('/a', rateLimit({ limit: 100, validate: { trustProxy: false } }), ok)
      .get('/b', rateLimit({ limit: 100, validate: false }), ok)
    const server = new Koa({ proxy: true }).use(router.routes()).callback()
    await request(server).get('/a')
    await request(server).get('/b').set('X-Forwarded-For', '198.51.100.1')
    expect(codes()).toEqual([])
  })
})
