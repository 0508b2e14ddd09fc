import { ManualClock } from '@sluice/core'
import { keys, memoryStore } from '@sluice/http'
import { type Context, Hono, type Next } from 'hono'
import { stream } from 'hono/streaming'
import { describe, expect, it } from 'vitest'
import { Bulkhead, RateLimit } from './decorators'
import type { RateLimitEnv } from './variables'

const clock = new ManualClock()
const rateStore = memoryStore({ clock })
const slots = memoryStore()

class Controller {
  readonly greeting = 'hello'

  @RateLimit({ limit: 2, window: '1m', key: keys.global(), clock, store: rateStore })
  async greet(c: Context) {
    return c.json({ greeting: this.greeting, remaining: c.get('rateLimit')?.remaining })
  }

  @Bulkhead({ max: 1, store: slots })
  async fail(_c: Context) {
    expect(slots.inFlight).toBe(1)
    throw new Error('handler rejected')
  }

  @Bulkhead({ max: 1, store: slots })
  async work(c: Context) {
    return c.json({ inFlight: slots.inFlight, greeting: this.greeting })
  }

  @Bulkhead({ max: 1, store: slots })
  async export(c: Context) {
    return stream(c, async (body) => {
      await body.write('id,name\n')
      await body.write('42,Ada\n')
    })
  }

  /** Used as middleware: the decorated method passes on to the next handler. */
  @RateLimit({ name: 'mw', limit: 5, window: '1m', key: keys.global(), clock, store: rateStore })
  async guard(_c: Context, next: Next) {
    await next()
  }
}

const controller = new Controller()
const app = new Hono<RateLimitEnv>()
  .get('/greet', (c) => controller.greet(c))
  .get('/fail', (c) => controller.fail(c))
  .get('/work', (c) => controller.work(c))
  .get('/export', (c) => controller.export(c))
  .get(
    '/guarded',
    (c, next) => controller.guard(c, next),
    (c) => c.json({ policy: c.get('rateLimit')?.policy }),
  )
  .onError((error, c) => c.json({ error: error.message }, 500))

describe('decorators (hono)', () => {
  it('@RateLimit limits a class method, keeping `this`', async () => {
    expect(await (await app.request('/greet')).json()).toEqual({ greeting: 'hello', remaining: 1 })
    expect((await app.request('/greet')).status).toBe(200)
    const refused = await app.request('/greet')
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([429, '66'])
  })

  it('a decorated method can be middleware that calls next()', async () => {
    const res = await app.request('/guarded')
    expect([res.status, await res.json(), res.headers.get('ratelimit-policy')]).toEqual([
      200,
      { policy: 'mw' },
      '"mw";q=5;w=60',
    ])
  })

  it('@Bulkhead holds a slot while the method runs and frees it when it fails', async () => {
    expect(await (await app.request('/work')).json()).toEqual({ inFlight: 1, greeting: 'hello' })
    const failed = await app.request('/fail')
    expect([failed.status, await failed.json()]).toEqual([500, { error: 'handler rejected' }])
    expect(slots.inFlight).toBe(0)
  })

  it('@Bulkhead holds the slot until a streamed body has been read', async () => {
    const res = await app.request('/export')
    expect(slots.inFlight).toBe(1)
    expect((await app.request('/work')).status).toBe(503)
    expect(await res.text()).toBe('id,name\n42,Ada\n')
    expect(slots.inFlight).toBe(0)
  })

  it('refuses to decorate anything but a method', () => {
    const context = { kind: 'getter' } as unknown as ClassMethodDecoratorContext<unknown, never>
    const method = async () => undefined
    expect(() => RateLimit({ limit: 1 })(method, context)).toThrow(
      new TypeError('@RateLimit: decorates methods only'),
    )
    expect(() => Bulkhead({ max: 1 })(method, context)).toThrow(
      new TypeError('@Bulkhead: decorates methods only'),
    )
  })
})
