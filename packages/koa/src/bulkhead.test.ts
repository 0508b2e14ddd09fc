import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import Router from '@koa/router'
import { memoryStore } from '@sluice/http'
import { gate, type RunningServer, send, start, until } from '@sluice/http/testing'
import Koa from 'koa'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { bulkhead } from './bulkhead'

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

/** Listens on an ephemeral port, closed after the test. */
async function listen(app: { callback(): RequestListener }): Promise<RunningServer> {
  const server = createServer(app.callback())
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, close: async () => {} }
}

describe('bulkhead (koa)', () => {
  it('returns a named middleware that frees its slot before an error middleware answers', async () => {
    const store = memoryStore()
    const limiter = bulkhead({ max: 1, store })
    expect(limiter.name).toBe('bulkhead')
    expect(limiter.policies.map((p) => [p.name, p.limit])).toEqual([['1-concurrent', 1]])
    const seenInFlight: number[] = []
    const app = new Koa()
      .use(async (ctx, next) => {
        try {
          await next()
        } catch {
          seenInFlight.push(store.inFlight)
          ctx.status = 502
        }
      })
      .use(limiter)
      .use(async () => {
        await new Promise((resolve) => setImmediate(resolve))
        throw new Error('downstream failed')
      })
    expect((await request(app.callback()).get('/')).status).toBe(502)
    expect((await request(app.callback()).get('/')).status).toBe(502)
    expect(seenInFlight).toEqual([0, 0])
    expect(store.inFlight).toBe(0)
  })

  it('keeps separate bulkheads per key', async () => {
    const store = memoryStore()
    const work = gate()
    const app = new Koa()
      .use(bulkhead({ max: 1, key: (ctx) => ctx.get('x-tenant'), store }))
      .use(async (ctx) => {
        await work.enter()
        ctx.body = 'done'
      })
    const server = await listen(app)
    const a = start(server, '/', { 'x-tenant': 'a' })
    await until(() => work.arrived === 1, 'tenant a holds its slot')
    expect((await send(server, '/', { headers: { 'x-tenant': 'a' } })).status).toBe(503)
    const b = start(server, '/', { 'x-tenant': 'b' })
    await until(() => work.arrived === 2, 'tenant b holds its own slot')
    expect(store.inFlight).toBe(2)
    work.open()
    expect([(await a.replied).status, (await b.replied).status]).toEqual([200, 200])
    await until(() => store.inFlight === 0, 'both slots are released')
  })

  it('answers a refusal with onLimited, or a custom status, message and Retry-After', async () => {
    const work = gate()
    const router = new Router()
      .get(
        '/',
        bulkhead({ max: 1, statusCode: 429, message: { error: 'busy' }, retryAfter: '3s' }),
        async (ctx) => {
          await work.enter()
          ctx.body = 'done'
        },
      )
      .get(
        '/custom',
        bulkhead({
          max: 1,
          onLimited: (ctx, _next, decision) => {
            ctx.status = 503
            ctx.body = `try later (${decision.remaining} free)`
          },
        }),
        async (ctx) => {
          await work.enter()
          ctx.body = 'done'
        },
      )
    const server = await listen(new Koa().use(router.routes()))
    const first = start(server, '/')
    const second = start(server, '/custom')
    await until(() => work.arrived === 2, 'both routes hold their slot')
    const refused = await send(server, '/')
    expect([refused.status, JSON.parse(refused.body), refused.headers['retry-after']]).toEqual([
      429,
      { error: 'busy' },
      '3',
    ])
    const custom = await send(server, '/custom')
    expect([custom.status, custom.body, custom.headers['retry-after']]).toEqual([
      503,
      'try later (0 free)',
      '1',
    ])
    work.open()
    expect([(await first.replied).status, (await second.replied).status]).toEqual([200, 200])
  })

  it('holds the slot while a web ReadableStream body is sent', async () => {
    const store = memoryStore()
    const body = gate()
    const app = new Koa().use(bulkhead({ max: 1, store })).use((ctx) => {
      ctx.body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode('first\n'))
          await body.enter()
          controller.enqueue(new TextEncoder().encode('last\n'))
          controller.close()
        },
      })
    })
    const server = await listen(app)
    const streaming = start(server, '/')
    await streaming.firstByte
    // The middleware chain has long returned: only the response holds the slot now.
    expect(store.inFlight).toBe(1)
    expect((await send(server, '/')).status).toBe(503)
    body.open()
    expect((await streaming.replied).body).toBe('first\nlast\n')
    await until(() => store.inFlight === 0, 'the slot is released')
  })

  it('frees the slot when a streamed body fails or its client leaves mid-stream', async () => {
    const store = memoryStore()
    const streams: PassThrough[] = []
    const app = new Koa()
    app.silent = true
    app.use(bulkhead({ max: 2, store })).use((ctx) => {
      const stream = new PassThrough()
      streams.push(stream)
      ctx.body = stream
      stream.write('first\n')
    })
    const server = await listen(app)
    const failing = start(server, '/')
    const leaving = start(server, '/')
    await Promise.all([failing.firstByte, leaving.firstByte])
    expect(store.inFlight).toBe(2)
    streams[0]!.destroy(new Error('source failed'))
    await until(() => store.inFlight === 1, 'the failed stream frees its slot')
    leaving.abort()
    await until(() => store.inFlight === 0, 'the abandoned stream frees its slot')
    await expect(failing.replied).rejects.toThrow()
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
    expect(() => bulkhead({ onLimited: 1 as never })).toThrow(
      new TypeError('bulkhead: "onLimited" must be a function, got 1'),
    )
    expect(() => bulkhead({ retryAfter: 0 })).toThrow(
      new RangeError('bulkhead: "retryAfter" must be a positive duration, got 0'),
    )
  })
})
