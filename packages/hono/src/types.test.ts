import { keys, memoryStore, type RateLimitInfo } from '@sluice/http'
import { type Context, Hono } from 'hono'
import { hc, type InferResponseType } from 'hono/client'
import { validator } from 'hono/validator'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { bulkhead } from './bulkhead'
import { Bulkhead, RateLimit } from './decorators'
import { rateLimit } from './rate-limit'

// Types are checked by `tsc` (the package's typecheck); the requests below check that
// the typed code also does what its types say.

type AppEnv = { Bindings: { REGION: string }; Variables: { user: string } }

const limited = () =>
  rateLimit({ limit: 10, window: '1m', key: keys.global(), store: memoryStore() })

describe('types (hono)', () => {
  it('a per-route rateLimit types c.get("rateLimit") and keeps params, validators and env', async () => {
    const app = new Hono<AppEnv>().post(
      '/users/:id',
      limited(),
      bulkhead({ max: 2 }),
      validator('json', (value) => value as { name: string }),
      (c) => {
        expectTypeOf(c.get('rateLimit')).toEqualTypeOf<RateLimitInfo | undefined>()
        expectTypeOf(c.var.rateLimit).toEqualTypeOf<RateLimitInfo | undefined>()
        expectTypeOf(c.req.param('id')).toEqualTypeOf<string>()
        expectTypeOf(c.req.valid('json')).toEqualTypeOf<{ name: string }>()
        expectTypeOf(c.env.REGION).toEqualTypeOf<string>()
        expectTypeOf(c.get('user')).toEqualTypeOf<string>()
        return c.json({
          id: c.req.param('id'),
          name: c.req.valid('json').name,
          remaining: c.get('rateLimit')?.remaining ?? -1,
        })
      },
    )
    const res = await app.request(
      '/users/7',
      {
        method: 'POST',
        body: JSON.stringify({ name: 'Ada' }),
        headers: { 'content-type': 'application/json' },
      },
      { REGION: 'eu' },
    )
    expect(await res.json()).toEqual({ id: '7', name: 'Ada', remaining: 9 })
  })

  it('app.use(rateLimit()) types the routes registered after it', async () => {
    const app = new Hono().use(limited()).get('/quota', (c) => {
      expectTypeOf(c.get('rateLimit')).toEqualTypeOf<RateLimitInfo | undefined>()
      return c.json({ left: c.get('rateLimit')?.remaining ?? -1 })
    })
    expect(await (await app.request('/quota')).json()).toEqual({ left: 9 })
  })

  it('the RPC client still infers the response type of a limited route', async () => {
    const app = new Hono().get('/items/:id', limited(), (c) =>
      c.json({ id: c.req.param('id'), left: c.get('rateLimit')?.remaining ?? -1 }),
    )
    const client = hc<typeof app>('http://localhost', {
      fetch: (input: Parameters<typeof app.request>[0], init?: RequestInit) =>
        app.request(input, init),
    })
    const get = client.items[':id'].$get
    expectTypeOf<InferResponseType<typeof get>>().toEqualTypeOf<{ id: string; left: number }>()
    const res = await get({ param: { id: '3' } })
    expect(await res.json()).toEqual({ id: '3', left: 9 })
  })

  it('decorated methods fit typed routes', async () => {
    class Items {
      @RateLimit({ limit: 10, key: keys.global(), store: memoryStore() })
      async show(c: Context<AppEnv, '/items/:id'>) {
        return c.json({ id: c.req.param('id'), region: c.env.REGION })
      }

      @Bulkhead({ max: 1 })
      async list(c: Context<AppEnv>) {
        return c.json({ user: c.get('user') })
      }
    }
    const items = new Items()
    const app = new Hono<AppEnv>()
      .use(async (c, next) => {
        c.set('user', 'ada')
        await next()
      })
      .get('/items/:id', (c) => items.show(c))
      .get('/items', (c) => items.list(c))
    expect(await (await app.request('/items/5', {}, { REGION: 'eu' })).json()).toEqual({
      id: '5',
      region: 'eu',
    })
    expect(await (await app.request('/items')).json()).toEqual({ user: 'ada' })
  })
})
