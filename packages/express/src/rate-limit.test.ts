import { ManualClock } from '@sluice/core'
import { type Decision, keys, memoryStore, type Store } from '@sluice/http'
import { forgetWarnings } from '@sluice/http/testing'
import express, { type NextFunction, type Request, type Response } from 'express'
import request from 'supertest'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { rateLimit } from './rate-limit'

const manual = () => {
  const clock = new ManualClock()
  return { clock, store: memoryStore({ clock }) }
}

const ok = (req: Request, res: Response) => {
  res.json({ remaining: req.rateLimit?.remaining ?? null })
}

beforeEach(() => {
  forgetWarnings()
})

afterEach(() => {
  vi.restoreAllMocks()
})

describe('rateLimit (express)', () => {
  it('returns a named middleware with handles on its state', async () => {
    const { clock, store } = manual()
    const limiter = rateLimit({ limit: 2, window: '1m', key: keys.global(), clock, store })
    expect(limiter.name).toBe('rateLimit')
    expect(limiter.store).toBe(store)
    expect(limiter.policies.map((p) => p.name)).toEqual(['2-per-1m'])
    const app = express().get('/', limiter, ok)
    await request(app).get('/')
    await request(app).get('/')
    expect((await request(app).get('/')).status).toBe(429)
    await limiter.resetKey('global')
    expect((await request(app).get('/')).status).toBe(200)
  })

  it('works on a router, limiting only what the router serves', async () => {
    const { clock, store } = manual()
    const api = express.Router()
    api.use(rateLimit({ limit: 1, window: '1m', clock, store, validate: false }))
    api.get('/items', ok)
    const app = express().use('/api', api).get('/health', ok)
    expect((await request(app).get('/api/items')).status).toBe(200)
    expect((await request(app).get('/api/items')).status).toBe(429)
    expect((await request(app).get('/health')).status).toBe(200)
  })

  it('keys.route() sees the mounted route pattern', async () => {
    const { clock, store } = manual()
    const router = express.Router()
    router.get(
      '/users/:id',
      rateLimit({ limit: 5, window: '1m', key: keys.route(), clock, store }),
      (req, res) => {
        res.json({ key: req.rateLimit?.key })
      },
    )
    const app = express().use('/v1', router)
    expect((await request(app).get('/v1/users/42')).body).toEqual({ key: 'GET /v1/users/:id' })
  })

  it('onLimited answers refusals, with headers and Retry-After already set', async () => {
    const { clock, store } = manual()
    const seen: Decision[] = []
    const app = express().get(
      '/',
      rateLimit({
        limit: 1,
        window: '10s',
        algorithm: 'fixed-window',
        clock,
        store,
        onLimited: (req, res, _next, decision) => {
          seen.push(decision)
          res
            .status(429)
            .json({ retryIn: res.getHeader('Retry-After'), same: req.rateLimit === decision })
        },
      }),
      ok,
    )
    await request(app).get('/')
    const refused = await request(app).get('/')
    expect(refused.status).toBe(429)
    expect(refused.body).toEqual({ retryIn: '10', same: true })
    expect(refused.headers.ratelimit).toBe('"1-per-10s-fixed-window";r=0;t=10')
    expect(seen.map((d) => [d.allowed, d.retryAfterMs])).toEqual([[false, 10_000]])
  })

  it('passes a failing key extractor or cost to the error handler', async () => {
    const errors: string[] = []
    const app = express()
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
      .use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
        errors.push(error.message)
        res.status(500).end()
      })
    expect((await request(app).get('/key')).status).toBe(500)
    expect((await request(app).get('/cost')).status).toBe(500)
    expect(errors).toEqual([
      'rateLimit: the "key" function failed: no key today',
      'rateLimit: "cost" must return a positive integer or { [policyName]: number }, got 0',
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
    const app = express().get('/', rateLimit({ limit: 1, window: '1m', clock, store: slow }), ok)
    const first = await request(app).get('/')
    expect([first.status, first.body.remaining]).toEqual([200, 0])
    expect((await request(app).get('/')).status).toBe(429)
  })

  it('validates options at construction, naming the option', () => {
    expect(() => rateLimit({ windowMs: 60_000 } as never)).toThrow(
      new TypeError(
        `rateLimit: unknown option "windowMs" (use "window": milliseconds or a string such as '15m')`,
      ),
    )
    expect(() => rateLimit({ max: 5 } as never)).toThrow(
      new TypeError('rateLimit: unknown option "max" (use "limit")'),
    )
    // Issue 14: names from other libraries get a pointer; typos get the closest name.
    expect(() => rateLimit({ skipSuccessfulRequests: true } as never)).toThrow(
      new TypeError(
        'rateLimit: unknown option "skipSuccessfulRequests" (use refundWhen: (req, res) => res.statusCode < 400)',
      ),
    )
    expect(() => rateLimit({ limt: 5 } as never)).toThrow(
      new TypeError('rateLimit: unknown option "limt" (did you mean "limit"?)'),
    )
    expect(() => rateLimit({ duration: 60 } as never)).toThrow(
      new TypeError(
        `rateLimit: unknown option "duration" (use "window": rate-limiter-flexible counts seconds, sluice takes '60s' or milliseconds)`,
      ),
    )
    // Issue 11: nested options are checked too.
    expect(() => rateLimit({ policies: [{ name: 'a', limt: 5 }] } as never)).toThrow(
      new TypeError('rateLimit: unknown option "limt" (did you mean "limit"?)'),
    )
    expect(() => rateLimit({ wait: { timeout: '1s', maxqueue: 5 } } as never)).toThrow(
      new TypeError('rateLimit: "wait": unknown option "maxqueue" (did you mean "maxQueue"?)'),
    )
    expect(() => rateLimit({ cost: 1e308 })).toThrow(
      new RangeError('rateLimit: "cost" must be a positive integer, got 1e+308'),
    )
    expect(() => rateLimit({ limit: 2 ** 60 })).toThrow(
      new RangeError(`rateLimit: "limit" must be a positive integer, got ${2 ** 60}`),
    )
    expect(() => rateLimit({ name: 'n'.repeat(1 << 20) })).toThrow(RangeError)
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
    expect(() => rateLimit({ wait: { timeout: '1 minute' as never } })).toThrow(RangeError)
    expect(() => rateLimit({ store: {} as never })).toThrow(
      new TypeError(
        'rateLimit: "store" must implement take, refund, release, get, reset, resetAll, got an object',
      ),
    )
  })
})

describe('one-time validations', () => {
  const warnings = () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    return () => spy.mock.calls.map(([, options]) => (options as { code: string }).code)
  }

  it('warns once when X-Forwarded-For arrives while trust proxy is off', async () => {
    const codes = warnings()
    const app = express().get('/', rateLimit({ limit: 100 }), ok)
    await request(app).get('/')
    expect(codes()).toEqual([])
    await request(app).get('/').set('X-Forwarded-For', '198.51.100.1')
    await request(app).get('/').set('X-Forwarded-For', '198.51.100.2')
    expect(codes()).toEqual(['ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'])
  })

  it('stays quiet about X-Forwarded-For once trust proxy is set', async () => {
    const codes = warnings()
    const app = express()
      .set('trust proxy', 1)
      .get('/', rateLimit({ limit: 100 }), ok)
    await request(app).get('/').set('X-Forwarded-For', '198.51.100.1')
    expect(codes()).toEqual([])
  })

  it('warns once when trust proxy is true', async () => {
    const codes = warnings()
    const app = express()
      .set('trust proxy', true)
      .get('/', rateLimit({ limit: 100 }), ok)
    await request(app).get('/')
    await request(app).get('/')
    expect(codes()).toEqual(['ERR_SLUICE_PERMISSIVE_TRUST_PROXY'])
  })

  it('can be switched off one by one, or all at once', async () => {
    const codes = warnings()
    const quiet = express()
      .set('trust proxy', true)
      .get('/a', rateLimit({ limit: 100, validate: { trustProxy: false } }), ok)
      .get('/b', rateLimit({ limit: 100, validate: false }), ok)
    await request(quiet).get('/a')
    await request(quiet).get('/b').set('X-Forwarded-For', '198.51.100.1')
    expect(codes()).toEqual([])
    expect(() => rateLimit({ validate: 'yes' as never })).toThrow(
      new TypeError('rateLimit: "validate" must be a boolean or an object, got "yes"'),
    )
  })
})
