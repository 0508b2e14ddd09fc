import { ManualClock } from '@sluice/core'
import { forgetWarnings } from '@sluice/http/testing'
import express, { type Request, type Response } from 'express'
import request from 'supertest'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { keys, memoryStore } from './index'
import { rateLimit } from './rate-limit'

const ok = (_req: Request, res: Response) => void res.send('ok')

/** The codes of the SluiceWarnings given since the test began, in order. */
let codes: () => string[]
beforeEach(() => {
  forgetWarnings()
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
  codes = () =>
    spy.mock.calls
      .filter(([, options]) => (options as { type?: string }).type === 'SluiceWarning')
      .map(([, options]) => (options as { code: string }).code)
})
afterEach(() => {
  vi.restoreAllMocks()
})

// Issue 14: the warnings express-rate-limit users rely on, each once, each with a help page.
describe('warnings (express)', () => {
  it('ERR_SLUICE_FALLBACK_KEY: a key function that finds no key, once', async () => {
    const app = express().get(
      '/',
      rateLimit({ limit: 100, key: (req) => req.get('x-user') || undefined }),
      ok,
    )
    await request(app).get('/').set('x-user', 'ann')
    expect(codes()).toEqual([])
    await request(app).get('/')
    await request(app).get('/')
    expect(codes()).toEqual(['ERR_SLUICE_FALLBACK_KEY'])
  })

  it('ERR_SLUICE_KEY_RAW_IPV6: a custom key that is a raw IPv6 address', async () => {
    const app = express().get(
      '/',
      rateLimit({ limit: 100, key: (req) => req.get('x-client') ?? 'none' }),
      ok,
    )
    await request(app).get('/').set('x-client', 'tenant-7')
    expect(codes()).toEqual([])
    await request(app).get('/').set('x-client', '2001:db8::1')
    await request(app).get('/').set('x-client', '2001:db8::2')
    expect(codes()).toEqual(['ERR_SLUICE_KEY_RAW_IPV6'])
  })

  it('ERR_SLUICE_KEY_WITH_PORT: a custom key that keeps the client port', async () => {
    const app = express().get(
      '/',
      rateLimit({ limit: 100, key: (req) => `${req.ip}:${req.socket.remotePort}` }),
      ok,
    )
    await request(app).get('/')
    expect(codes()).toEqual(['ERR_SLUICE_KEY_WITH_PORT'])
  })

  it('ERR_SLUICE_DOUBLE_COUNT: one middleware mounted twice counts a request once', async () => {
    const limiter = rateLimit({ limit: 2, key: keys.global(), clock: new ManualClock() })
    const app = express()
    app.use(limiter)
    app.get('/', limiter, (req, res) => void res.json(req.rateLimit))
    const first = await request(app).get('/')
    expect(first.body.remaining).toBe(1)
    await request(app).get('/')
    expect(codes()).toEqual(['ERR_SLUICE_DOUBLE_COUNT'])
  })

  it('ERR_SLUICE_CREATED_IN_REQUEST: a limiter made inside a request handler', async () => {
    const app = express().get(
      '/',
      (req, res, next) => {
        rateLimit({ limit: 1, store: memoryStore() })(req, res, next)
      },
      ok,
    )
    // A new limiter, and a new budget, for every request: nothing is ever refused.
    expect((await request(app).get('/')).status).toBe(200)
    expect((await request(app).get('/')).status).toBe(200)
    expect(codes()).toEqual(['ERR_SLUICE_CREATED_IN_REQUEST'])
  })

  it('ERR_SLUICE_WINDOW_IN_MS: a bare number under a second', () => {
    rateLimit({ limit: 10, window: 60 })
    rateLimit({ limit: 10, window: '60s' })
    rateLimit({ limit: 10, window: 60_000 })
    expect(codes()).toEqual(['ERR_SLUICE_WINDOW_IN_MS'])
  })

  it('ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY: trust proxy on, and no proxy header comes', async () => {
    const app = express()
      .set('trust proxy', 1)
      .get('/', rateLimit({ limit: 1000 }), ok)
    for (let i = 0; i < 99; i++) await request(app).get('/')
    expect(codes()).toEqual([])
    await request(app).get('/')
    await request(app).get('/')
    expect(codes()).toEqual(['ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY'])
    // A proxy that forwards the header keeps it quiet.
    forgetWarnings()
    const proxied = express()
      .set('trust proxy', 1)
      .get('/', rateLimit({ limit: 1000 }), ok)
    await request(proxied).get('/').set('X-Forwarded-For', '203.0.113.9')
    for (let i = 0; i < 120; i++) await request(proxied).get('/')
    expect(codes()).toEqual(['ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY'])
  })

  it('links each warning to its help page', async () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    rateLimit({ limit: 1, window: 5 })
    expect(String(spy.mock.calls.at(-1)?.[0])).toMatch(
      /\(see https:\/\/github\.com\/sluice-js\/sluice\/blob\/main\/docs\/warnings\/ERR_SLUICE_WINDOW_IN_MS\.md\)$/,
    )
  })
})
