import { memoryStore } from '@sluice/http'
import express, { type NextFunction, type Request, type Response } from 'express'
import request from 'supertest'
import { describe, expect, it } from 'vitest'
import { bulkhead } from './bulkhead'

describe('bulkhead (express)', () => {
  it('returns a named middleware that frees its slot when the handler calls next(err)', async () => {
    const store = memoryStore()
    const limiter = bulkhead({ max: 1, store })
    expect(limiter.name).toBe('bulkhead')
    expect(limiter.policies.map((p) => [p.name, p.limit])).toEqual([['1-concurrent', 1]])
    const app = express()
      .get('/', limiter, (_req: Request, _res: Response, next: NextFunction) => {
        setImmediate(() => next(new Error('downstream failed')))
      })
      .use((_error: Error, _req: Request, res: Response, _next: NextFunction) => {
        res.status(502).end()
      })
    expect((await request(app).get('/')).status).toBe(502)
    expect(store.inFlight).toBe(0)
    expect((await request(app).get('/')).status).toBe(502)
  })

  it('keeps separate bulkheads per key', async () => {
    const store = memoryStore()
    const hold: (() => void)[] = []
    const app = express().get(
      '/',
      bulkhead({ max: 1, key: (req: Request) => req.get('x-tenant'), store }),
      (_req, res) => {
        hold.push(() => res.end())
      },
    )
    const a = request(app)
      .get('/')
      .set('x-tenant', 'a')
      .then((r) => r.status)
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect((await request(app).get('/').set('x-tenant', 'a')).status).toBe(503)
    const b = request(app)
      .get('/')
      .set('x-tenant', 'b')
      .then((r) => r.status)
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(store.inFlight).toBe(2)
    for (const release of hold) release()
    expect([await a, await b]).toEqual([200, 200])
  })

  it('answers a refusal with onLimited and a custom status and message', async () => {
    const hold: (() => void)[] = []
    const app = express()
      .get(
        '/',
        bulkhead({ max: 1, statusCode: 429, message: { error: 'busy' }, retryAfter: '3s' }),
        (_req, res) => {
          hold.push(() => res.end())
        },
      )
      .get(
        '/custom',
        bulkhead({ max: 1, onLimited: (_req, res) => res.status(503).send('try later') }),
        (_req, res) => {
          hold.push(() => res.end())
        },
      )
    const first = request(app)
      .get('/')
      .then((r) => r.status)
    const second = request(app)
      .get('/custom')
      .then((r) => r.status)
    await new Promise((resolve) => setTimeout(resolve, 30))
    const refused = await request(app).get('/')
    expect([refused.status, refused.body, refused.headers['retry-after']]).toEqual([
      429,
      { error: 'busy' },
      '3',
    ])
    const custom = await request(app).get('/custom')
    expect([custom.status, custom.text]).toEqual([503, 'try later'])
    for (const release of hold) release()
    expect([await first, await second]).toEqual([200, 200])
  })

  it('validates options at construction', () => {
    expect(() => bulkhead({ max: 0 })).toThrow(
      new RangeError('bulkhead: "max" must be a positive integer, got 0'),
    )
    expect(() => bulkhead({ maxQueue: -1 })).toThrow(
      new RangeError('bulkhead: "maxQueue" must be a non-negative integer, got -1'),
    )
    expect(() => bulkhead({ limit: 5 } as never)).toThrow(
      new TypeError(
        'bulkhead: unknown option "limit" (use "max": a bulkhead counts requests in flight, not per window)',
      ),
    )
    expect(() => bulkhead({ headers: 'draft-9' as never })).toThrow(TypeError)
    expect(() => bulkhead({ retryAfter: 0 })).toThrow(
      new RangeError('bulkhead: "retryAfter" must be a positive duration, got 0'),
    )
  })
})
