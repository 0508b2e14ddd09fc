import Router, { type RouterContext } from '@koa/router'
import { ManualClock } from '@sluice/core'
import { memoryStore } from '@sluice/http'
import Koa, { type Context, type Next } from 'koa'
import request from 'supertest'
import { describe, expect, it } from 'vitest'
import { Bulkhead, RateLimit } from './decorators'

const clock = new ManualClock()
const rateStore = memoryStore({ clock })
const slots = memoryStore()

class Controller {
  readonly greeting = 'hello'

  @RateLimit({ limit: 2, window: '1m', clock, store: rateStore })
  async greet(ctx: Context, _next: Next) {
    ctx.body = { greeting: this.greeting, remaining: ctx.state.rateLimit?.remaining }
  }

  @Bulkhead({ max: 1, store: slots })
  async fail(_ctx: Context, _next: Next) {
    expect(slots.inFlight).toBe(1)
    throw new Error('handler rejected')
  }

  /** Typed with @koa/router's context, as route handlers usually are. */
  @Bulkhead({ max: 1, store: slots })
  work(ctx: RouterContext, _next: Next) {
    ctx.body = { inFlight: slots.inFlight, greeting: this.greeting }
  }

  /** Used as middleware: the decorated method passes on to the next one. */
  @RateLimit({ name: 'mw', limit: 5, window: '1m', clock, store: rateStore })
  async guard(_ctx: Context, next: Next) {
    await next()
  }
}

const controller = new Controller()
const releasedBeforeResponse: number[] = []
const router = new Router()
  .get('/greet', (ctx, next) => controller.greet(ctx, next))
  .get('/fail', (ctx, next) => controller.fail(ctx, next))
  .get('/work', (ctx, next) => controller.work(ctx, next))
  .get(
    '/guarded',
    (ctx, next) => controller.guard(ctx, next),
    (ctx) => {
      ctx.body = { policy: ctx.state.rateLimit?.policy }
    },
  )
const app = new Koa()
  .use(async (ctx, next) => {
    try {
      await next()
    } catch (error) {
      releasedBeforeResponse.push(slots.inFlight)
      ctx.status = 500
      ctx.body = { error: (error as Error).message }
    }
  })
  .use(router.routes())
const server = app.callback()

describe('decorators (koa)', () => {
  it('@RateLimit limits a class method, keeping `this`', async () => {
    expect((await request(server).get('/greet')).body).toEqual({ greeting: 'hello', remaining: 1 })
    expect((await request(server).get('/greet')).status).toBe(200)
    const refused = await request(server).get('/greet')
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toBeDefined()
  })

  it('a decorated method can be middleware that calls next()', async () => {
    const res = await request(server).get('/guarded')
    expect([res.status, res.body, res.headers['ratelimit-policy']]).toEqual([
      200,
      { policy: 'mw' },
      '"mw";q=5;w=60',
    ])
  })

  it('@Bulkhead holds a slot while the method runs and frees it at once when it fails', async () => {
    expect((await request(server).get('/work')).body).toEqual({ inFlight: 1, greeting: 'hello' })
    const failed = await request(server).get('/fail')
    expect([failed.status, failed.body]).toEqual([500, { error: 'handler rejected' }])
    // The error middleware already saw the slot free: it was released before the response.
    expect(releasedBeforeResponse).toEqual([0])
    expect(slots.inFlight).toBe(0)
  })

  it('refuses to decorate anything but a method', () => {
    const context = { kind: 'getter' } as unknown as ClassMethodDecoratorContext<unknown, never>
    expect(() => RateLimit({ limit: 1 })(() => {}, context)).toThrow(
      new TypeError('@RateLimit: decorates methods only'),
    )
    expect(() => Bulkhead({ max: 1 })(() => {}, context)).toThrow(
      new TypeError('@Bulkhead: decorates methods only'),
    )
  })
})
