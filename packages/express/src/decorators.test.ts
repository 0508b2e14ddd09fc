import { ManualClock } from '@sluice/core'
import { memoryStore } from '@sluice/http'
import express, { type NextFunction, type Request, type Response } from 'express'
import request from 'supertest'
import { describe, expect, it } from 'vitest'
import { Bulkhead, RateLimit } from './decorators'

const clock = new ManualClock()
const rateStore = memoryStore({ clock })
const slots = memoryStore()

class Controller {
  readonly greeting = 'hello'

  @RateLimit({ limit: 2, window: '1m', clock, store: rateStore })
  async greet(req: Request, res: Response, _next: NextFunction) {
    res.json({ greeting: this.greeting, remaining: req.rateLimit?.remaining })
  }

  @Bulkhead({ max: 1, store: slots })
  async fail(_req: Request, _res: Response, _next: NextFunction) {
    expect(slots.inFlight).toBe(1)
    throw new Error('handler rejected')
  }

  @Bulkhead({ max: 1, store: slots })
  forward(_req: Request, _res: Response, next: NextFunction) {
    next(new Error('passed on'))
  }

  @Bulkhead({ max: 1, store: slots })
  work(_req: Request, res: Response, _next: NextFunction) {
    res.json({ inFlight: slots.inFlight })
  }
}

const controller = new Controller()
const releasedBeforeResponse: number[] = []
const app = express()
  .get('/greet', (req, res, next) => controller.greet(req, res, next))
  .get('/fail', (req, res, next) => controller.fail(req, res, next))
  .get('/forward', (req, res, next) => controller.forward(req, res, next))
  .get('/work', (req, res, next) => controller.work(req, res, next))
  .use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    releasedBeforeResponse.push(slots.inFlight)
    res.status(500).json({ error: error.message })
  })

describe('decorators (express)', () => {
  it('@RateLimit limits a class method, keeping `this`', async () => {
    expect((await request(app).get('/greet')).body).toEqual({ greeting: 'hello', remaining: 1 })
    expect((await request(app).get('/greet')).status).toBe(200)
    const refused = await request(app).get('/greet')
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toBeDefined()
  })

  it('@Bulkhead holds a slot while the method runs and frees it at once when it fails', async () => {
    expect((await request(app).get('/work')).body).toEqual({ inFlight: 1 })
    const failed = await request(app).get('/fail')
    expect([failed.status, failed.body]).toEqual([500, { error: 'handler rejected' }])
    const forwarded = await request(app).get('/forward')
    expect([forwarded.status, forwarded.body]).toEqual([500, { error: 'passed on' }])
    // The error handler already saw the slot free: it was released before the response.
    expect(releasedBeforeResponse).toEqual([0, 0])
    expect(slots.inFlight).toBe(0)
  })

  it('refuses to decorate anything but a method', () => {
    const decorate = RateLimit({ limit: 1 })
    expect(() =>
      decorate(() => {}, { kind: 'getter' } as unknown as ClassMethodDecoratorContext<
        unknown,
        never
      >),
    ).toThrow(new TypeError('@RateLimit: decorates methods only'))
  })
})
