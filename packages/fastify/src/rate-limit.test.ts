import { ManualClock } from '@sluice/core'
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
