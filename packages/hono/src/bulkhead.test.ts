import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { memoryStore } from '@sluice/http'
import { gate, type RunningServer, send, start, until } from '@sluice/http/testing'
import { Hono } from 'hono'
import { stream } from 'hono/streaming'
import { afterEach, describe, expect, it } from 'vitest'
import { bulkhead } from './bulkhead'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

/** Serves `app` with @hono/node-server on an ephemeral port, closed after the test. */
async function listen(app: Hono): Promise<RunningServer> {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
      const running = {
        port: (info as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            if ('closeAllConnections' in server) server.closeAllConnections()
            server.close(() => done())
          }),
      }
      closers.push(running.close)
      resolve(running)
    })
  })
}

describe('bulkhead (hono)', () => {
  it('returns a named middleware whose slot follows the body, not the handler', async () => {
    const store = memoryStore()
    const limiter = bulkhead({ max: 1, store })
    expect(limiter.name).toBe('bulkhead')
    expect(limiter.policies.map((p) => [p.name, p.limit])).toEqual([['1-concurrent', 1]])
    const app = new Hono().get('/', limiter, (c) =>
      stream(c, async (body) => {
        await body.write('first\n')
        await body.write('last\n')
      }),
    )
    const res = await app.request('/')
    // The handler has returned its Response; nobody has read the body yet.
    expect([res.status, store.inFlight]).toEqual([200, 1])
    expect((await app.request('/')).status).toBe(503)
    expect(await res.text()).toBe('first\nlast\n')
    expect(store.inFlight).toBe(0)
    expect((await app.request('/')).status).toBe(200)
  })

  it('frees the slot when the body is cancelled, and the stream hears about it', async () => {
    const store = memoryStore()
    const aborted: boolean[] = []
    const app = new Hono().get('/', bulkhead({ max: 1, store }), (c) =>
      stream(c, async (body) => {
        body.onAbort(() => {
          aborted.push(true)
        })
        await body.write('first\n')
        await new Promise(() => {})
      }),
    )
    const res = await app.request('/')
    const reader = res.body!.getReader()
    await reader.read()
    expect(store.inFlight).toBe(1)
    await reader.cancel()
    expect([store.inFlight, aborted]).toEqual([0, [true]])
  })

  it('holds the slot of a client that aborts until the handler is done, and tells the handler', async () => {
    const store = memoryStore()
    const work = gate()
    const app = new Hono().get('/', bulkhead({ max: 1, store }), async (c) => {
      await work.enter(c.var.bulkhead?.signal)
      return c.text('done')
    })
    const client = new AbortController()
    const pending = app.request('/', { signal: client.signal })
    await until(() => work.arrived === 1, 'the handler runs')
    expect(store.inFlight).toBe(1)
    client.abort()
    expect([store.inFlight, work.signals[0]?.aborted]).toEqual([1, true])
    work.open()
    await (await pending).text()
    expect(store.inFlight).toBe(0)
  })

  it('frees the slot when the handler throws, once the onError answer is sent', async () => {
    const store = memoryStore()
    const seenInFlight: number[] = []
    const app = new Hono()
      .get('/', bulkhead({ max: 1, store }), () => {
        throw new Error('handler failed')
      })
      .onError((error, c) => {
        seenInFlight.push(store.inFlight)
        return c.text(error.message, 500)
      })
    const failed = await app.request('/')
    expect([failed.status, await failed.text()]).toEqual([500, 'handler failed'])
    expect(await (await app.request('/')).text()).toBe('handler failed')
    // onError runs inside the handler's step, before the bulkhead sees the outcome.
    expect(seenInFlight).toEqual([1, 1])
    expect(store.inFlight).toBe(0)
  })

  it('puts its headers on a Response the handler builds by hand', async () => {
    const store = memoryStore()
    const app = new Hono().get('/', bulkhead({ max: 2, store }), () => new Response('raw'))
    const res = await app.request('/')
    expect([await res.text(), res.headers.get('ratelimit'), store.inFlight]).toEqual([
      'raw',
      '"2-concurrent";r=1',
      0,
    ])
  })

  it('keeps separate bulkheads per key', async () => {
    const store = memoryStore()
    const app = new Hono().get(
      '/',
      bulkhead({ max: 1, key: (c) => c.req.header('x-tenant'), store }),
      (c) => c.text('done'),
    )
    const tenant = (name: string) => ({ headers: { 'x-tenant': name } })
    const a = await app.request('/', tenant('a'))
    expect((await app.request('/', tenant('a'))).status).toBe(503)
    const b = await app.request('/', tenant('b'))
    expect([b.status, store.inFlight]).toEqual([200, 2])
    await a.text()
    await b.text()
    expect(store.inFlight).toBe(0)
  })

  it('answers a refusal with onLimited, or a custom status, message and Retry-After', async () => {
    const app = new Hono()
      .get(
        '/',
        bulkhead({ max: 1, statusCode: 429, message: { error: 'busy' }, retryAfter: '3s' }),
        (c) => c.text('done'),
      )
      .get(
        '/custom',
        bulkhead({
          max: 1,
          onLimited: (c, _next, decision) => c.text(`try later (${decision.remaining} free)`, 503),
        }),
        (c) => c.text('done'),
      )
    const held = [await app.request('/'), await app.request('/custom')]
    const refused = await app.request('/')
    expect([refused.status, await refused.json(), refused.headers.get('retry-after')]).toEqual([
      429,
      { error: 'busy' },
      '3',
    ])
    const custom = await app.request('/custom')
    expect([custom.status, await custom.text(), custom.headers.get('retry-after')]).toEqual([
      503,
      'try later (0 free)',
      '1',
    ])
    for (const res of held) await res.text()
  })

  it('under @hono/node-server, frees the slot even when an outer middleware drops the body', async () => {
    const store = memoryStore()
    const app = new Hono()
      .use(async (c, next) => {
        await next()
        // Replaces the response without reading the wrapped body: only the Node
        // response's 'close' can tell the bulkhead that the request is over.
        c.res = new Response('replaced', c.res)
      })
      .get('/', bulkhead({ max: 1, store }), (c) =>
        stream(c, async (body) => {
          await body.write('never read')
        }),
      )
    const server = await listen(app)
    expect((await send(server, '/')).body).toBe('replaced')
    await until(() => store.inFlight === 0, 'the slot is released')
    expect((await send(server, '/')).status).toBe(200)
  })

  it('under @hono/node-server, frees the slot when the client leaves mid-stream', async () => {
    const store = memoryStore()
    const app = new Hono().get('/', bulkhead({ max: 1, store }), (c) =>
      stream(c, async (body) => {
        await body.write('first\n')
        await new Promise(() => {})
      }),
    )
    const server = await listen(app)
    const leaving = start(server, '/')
    await leaving.firstByte
    expect(store.inFlight).toBe(1)
    leaving.abort()
    await until(() => store.inFlight === 0, 'the slot is released')
  })

  it('validates options at construction', () => {
    expect(() => bulkhead({ max: 0 })).toThrow(
      new RangeError('bulkhead: "max" must be a positive integer, got 0'),
    )
    expect(() => bulkhead({ limit: 5 } as never)).toThrow(
      new TypeError(
        'bulkhead: unknown option "limit" (use "max": a bulkhead counts requests in flight, not per window)',
      ),
    )
    expect(() => bulkhead({ getIp: 1 as never })).toThrow(
      new TypeError('bulkhead: "getIp" must be a function, got 1'),
    )
    expect(() => bulkhead({ onLimited: {} as never })).toThrow(
      new TypeError('bulkhead: "onLimited" must be a function, got an object'),
    )
  })
})
