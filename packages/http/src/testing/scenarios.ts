import diagnostics from 'node:diagnostics_channel'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { connect } from 'node:net'
import { adaptiveConcurrency, type Duration, ManualClock } from '@sluice/core'
import { type MaybePromise, type MemoryStore, memoryStore } from '@sluice/keyed'
import type { KeyedCost, Policy, Store } from '@sluice/keyed/store'
import { watchWarnings } from '@sluice/keyed/testing'
import { afterEach, describe, expect, it } from 'vitest'
import type { BulkheadOptions } from '../bulkhead-engine'
import { keys } from '../index'
import type { RateLimitOptions } from '../rate-limit-engine'

/**
 * The HTTP behaviour every adapter must show, written once and run against each
 * framework (Express here; Koa and Hono with their own harness). A scenario describes an
 * app in neutral terms; the harness builds it with the real framework on a real socket.
 */

/** A point a handler waits at until the test opens it; counts who arrived. */
export interface Gate {
  readonly arrived: number
  /** The bulkhead signal each handler that arrived brought (`req.bulkhead?.signal`), in order. */
  readonly signals: readonly (AbortSignal | undefined)[]
  /** Called by handlers, with their bulkhead's signal if any: resolves once the gate is open. */
  enter(signal?: AbortSignal): Promise<void>
  open(): void
}

export function gate(): Gate {
  const signals: (AbortSignal | undefined)[] = []
  let release: () => void = () => {}
  const opened = new Promise<void>((resolve) => {
    release = resolve
  })
  return {
    get arrived() {
      return signals.length
    },
    signals,
    enter(signal) {
      signals.push(signal)
      return opened
    },
    open: () => release(),
  }
}

/** What a route's handler does, in framework-neutral terms. */
export type HandlerSpec =
  /** 200 with JSON `{ rateLimit }`: the decision as the framework exposes it (or null). */
  | { kind: 'json' }
  /** The given status with JSON `{ rateLimit }`. */
  | { kind: 'status'; status: number }
  /** Waits at the gate, then answers like `json`. */
  | { kind: 'hold'; gate: Gate }
  /** Throws an error (the framework answers 500). */
  | { kind: 'throw' }
  /** Streams `first\n`, waits at the gate, then streams `last\n` and ends. */
  | { kind: 'stream'; gate: Gate }
  /**
   * Destroys its response and fails (the framework's error handling then answers what it
   * can, e.g. Express's `end()` on the destroyed response): the client gets no answer.
   */
  | { kind: 'destroy' }

/**
 * A middleware: one built from its options, or (`uncalled`) the factory itself handed to
 * the framework, as in `app.use(rateLimit)`.
 */
export type MiddlewareSpec =
  | { rateLimit: RateLimitOptions }
  | { bulkhead: BulkheadOptions }
  | { uncalled: 'rateLimit' | 'bulkhead' }

export interface RouteSpec {
  method: 'get' | 'post'
  /** A path pattern every framework reads alike, e.g. `/users/:id`. */
  path: string
  use?: MiddlewareSpec[]
  handler: HandlerSpec
}

export interface AppSpec {
  /**
   * Trust `X-Forwarded-For` from the loopback test client (Express `trust proxy`, Koa
   * `app.proxy`, ...), so a test can pose as any client address. Off by default.
   */
  trustProxy?: boolean
  /** Application-level middleware, in order. */
  use?: MiddlewareSpec[]
  routes: RouteSpec[]
  /**
   * Told every error the framework's error handling receives (from a middleware or a
   * handler) before it answers 500.
   */
  onError?: (error: unknown) => void
}

export interface RunningServer {
  readonly port: number
  close(): Promise<void>
  /**
   * The middleware built from `spec` (what `rateLimit()`/`bulkhead()` returned, with its
   * `get`, `resetKey`, `store`...). Harnesses build one middleware per spec object: the same
   * spec used twice in an app is the same middleware mounted twice.
   */
  middleware?(spec: MiddlewareSpec): unknown
}

/**
 * A memo for harnesses: builds one middleware per spec object and finds it again.
 *
 * @example
 * ```ts
 * const built = middlewareMemo((spec) => ('rateLimit' in spec ? rateLimit(spec.rateLimit) : bulkhead(spec.bulkhead)))
 * app.use(built.get(spec))
 * return { port, close, middleware: (spec) => built.get(spec) }
 * ```
 */
export function middlewareMemo<M>(build: (spec: MiddlewareSpec) => M): {
  get(spec: MiddlewareSpec): M
} {
  const made = new Map<MiddlewareSpec, M>()
  return {
    get(spec) {
      let middleware = made.get(spec)
      if (middleware === undefined) {
        middleware = build(spec)
        made.set(spec, middleware)
      }
      return middleware
    },
  }
}

/** What an adapter supplies to run the shared scenarios. */
export interface AdapterHarness {
  /** Shown in the suite's title. */
  name: string
  /** Builds the app with the real framework and listens on 127.0.0.1, an ephemeral port. */
  start(app: AppSpec): Promise<RunningServer>
  /** Reads a request header from what `skip`/`cost`/`key` callbacks receive. */
  header(req: unknown, name: string): string | undefined
  /** The response status from what `refundWhen(req, res)` receives. */
  status(req: unknown, res: unknown): number
  /**
   * How header lines reach the wire. `'as-set'` (default): with the case and in the order
   * the middleware set them (Node's `res.setHeader`). `'fetch'`: the adapter answers with a
   * Fetch `Response`, whose `Headers` lower-case every name and iterate them sorted (or,
   * like Fastify, lower-cases names itself), so the byte-exact checks compare names
   * case-insensitively and ignore the order of different names (values are still compared
   * exactly).
   */
  headerLines?: 'as-set' | 'fetch'
}

export interface Reply {
  status: number
  /** Header lines exactly as sent: name (case kept) and value. */
  raw: [string, string][]
  /** Lower-cased names; repeated lines joined with ", ". */
  headers: Record<string, string>
  body: string
}

/** Sends one request on its own connection and reads the whole reply. */
export function send(
  server: RunningServer,
  path: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: false,
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          body += chunk
        })
        res.on('end', () => resolve(reply(res, body)))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end()
  })
}

function reply(res: IncomingMessage, body: string): Reply {
  const raw: [string, string][] = []
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    raw.push([res.rawHeaders[i]!, res.rawHeaders[i + 1]!])
  }
  const headers: Record<string, string> = {}
  for (const [name, value] of raw) {
    const lower = name.toLowerCase()
    headers[lower] = headers[lower] === undefined ? value : `${headers[lower]}, ${value}`
  }
  return { status: res.statusCode ?? 0, raw, headers, body }
}

/** Starts a request and returns a handle to drop its connection mid-flight. */
export function start(server: RunningServer, path: string, headers: Record<string, string> = {}) {
  const req = httpRequest({ host: '127.0.0.1', port: server.port, path, headers, agent: false })
  const replied = new Promise<Reply>((resolve, reject) => {
    req.on('response', (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        body += chunk
      })
      res.on('end', () => resolve(reply(res, body)))
      res.on('error', reject)
    })
    req.on('error', reject)
  })
  replied.catch(() => {})
  req.end()
  return {
    replied,
    /** Resolves with the status line and headers, as soon as they arrive. */
    firstByte: new Promise<IncomingMessage>((resolve) => req.once('response', resolve)),
    abort: () => req.destroy(),
  }
}

/**
 * Writes several requests on one connection at once (HTTP/1.1 pipelining), waits until
 * `ready()` holds, then destroys the socket: the requests after the first never reach
 * their turn to be answered.
 */
export async function pipelineThenHangUp(
  server: RunningServer,
  paths: readonly string[],
  ready: () => boolean,
): Promise<void> {
  const socket = connect({ host: '127.0.0.1', port: server.port })
  socket.on('error', () => {})
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write(paths.map((path) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''))
  await until(ready, 'the pipelined requests reached their handlers')
  socket.destroy()
}

/** Collects what is published on a diagnostics channel until `stop()`. */
export function listen<T>(channel: string): { readonly events: T[]; stop(): void } {
  const events: T[] = []
  const onMessage = (message: unknown) => {
    events.push(message as T)
  }
  diagnostics.subscribe(channel, onMessage)
  return { events, stop: () => diagnostics.unsubscribe(channel, onMessage) }
}

/** Polls (on real time, without asserting any duration) until `condition` holds. */
export async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (condition()) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`timed out waiting until ${what}`)
}

/** Lets queued I/O callbacks (a response's 'finish') run before the next request. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 10))

/** The order in which the header writers set their headers (see `AdapterHarness.headerLines`). */
const WRITE_ORDER = [
  'ratelimit-policy',
  'ratelimit',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'retry-after',
]

/**
 * The named raw header lines of a reply. `'as-set'`: names and order exactly as sent.
 * `'fetch'`: a Fetch `Headers` object lower-cases names and sorts them, so names are
 * matched case-insensitively and shown as asked for, and lines are put back in the
 * writers' order; values, and the order of a name's repeated lines, stay as sent.
 */
function headerLines(res: Reply, names: string[], mode: 'as-set' | 'fetch'): string[] {
  const wanted = new Map(names.map((n) => [n.toLowerCase(), n]))
  const picked = res.raw.filter(([name]) => wanted.has(name.toLowerCase()))
  if (mode === 'as-set') return picked.map(([n, v]) => `${n}: ${v}`)
  const rank = (name: string) => WRITE_ORDER.indexOf(name.toLowerCase())
  return picked
    .slice()
    .sort(([a], [b]) => rank(a) - rank(b))
    .map(([n, v]) => `${wanted.get(n.toLowerCase())}: ${v}`)
}

const RATE_LIMIT_HEADERS = [
  'RateLimit',
  'RateLimit-Policy',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
]

/**
 * Registers the shared HTTP scenarios for one adapter.
 *
 * @example
 * ```ts
 * runAdapterScenarios({ name: 'express', start: startExpressApp, header: (req, n) => req.get(n), status: (_req, res) => res.statusCode })
 * ```
 */
export function runAdapterScenarios(harness: AdapterHarness): void {
  const lines = (res: Reply, ...names: string[]) =>
    headerLines(res, names, harness.headerLines ?? 'as-set')
  const running: RunningServer[] = []
  const serve = async (app: AppSpec) => {
    const server = await harness.start(app)
    running.push(server)
    return server
  }
  afterEach(async () => {
    await Promise.all(running.splice(0).map((server) => server.close()))
  })

  /** A limiter on the clock the test drives, with its own store. */
  const manual = () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    return { clock, store }
  }
  const statuses = async (server: RunningServer, path: string, n: number, headers = {}) => {
    const out: number[] = []
    for (let i = 0; i < n; i++) out.push((await send(server, path, { headers })).status)
    return out
  }
  const oneRoute = (
    options: RateLimitOptions,
    handler: HandlerSpec = { kind: 'json' },
  ): AppSpec => ({
    routes: [{ method: 'get', path: '/', use: [{ rateLimit: options }], handler }],
  })

  describe(`adapter scenarios: ${harness.name}`, () => {
    describe('each algorithm through HTTP', () => {
      it('sliding-window: the limit per rolling window, precise to one slot', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({ algorithm: 'sliding-window', limit: 2, window: '1s', clock, store }),
        )
        expect(await statuses(server, '/', 3)).toEqual([200, 200, 429])
        // Counted in the slot [0, 100 ms), the first two leave the window at 1,100 ms.
        clock.advance(1_099)
        expect(await statuses(server, '/', 1)).toEqual([429])
        clock.advance(1)
        expect(await statuses(server, '/', 3)).toEqual([200, 200, 429])
      })

      it('fixed-window: the count resets on the window boundary', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({ algorithm: 'fixed-window', limit: 2, window: '1s', clock, store }),
        )
        clock.advance(500)
        expect(await statuses(server, '/', 3)).toEqual([200, 200, 429])
        clock.advance(500)
        expect(await statuses(server, '/', 3)).toEqual([200, 200, 429])
      })

      it('token-bucket: a burst of capacity, then one per interval', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({
            algorithm: 'token-bucket',
            limit: 2,
            window: '1s',
            capacity: 3,
            clock,
            store,
          }),
        )
        expect(await statuses(server, '/', 4)).toEqual([200, 200, 200, 429])
        clock.advance(499)
        expect(await statuses(server, '/', 1)).toEqual([429])
        clock.advance(1)
        expect(await statuses(server, '/', 2)).toEqual([200, 429])
      })

      it('leaky-bucket: strictly paced, no burst', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({ algorithm: 'leaky-bucket', limit: 4, window: '1s', clock, store }),
        )
        expect(await statuses(server, '/', 2)).toEqual([200, 429])
        clock.advance(250)
        expect(await statuses(server, '/', 2)).toEqual([200, 429])
      })

      it('warm-up: a third of the burst when cold, all of it once warm', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({ algorithm: 'warm-up', limit: 3, window: '1s', warmUp: '10s', clock, store }),
        )
        expect(await statuses(server, '/', 2)).toEqual([200, 429])
        clock.advance(10_000)
        expect(await statuses(server, '/', 4)).toEqual([200, 200, 200, 429])
      })
    })

    describe('headers, byte-exact', () => {
      const fixed = { algorithm: 'fixed-window', limit: 100, window: '1m' } as const

      it("'draft-8' (the default) on an admitted request", async () => {
        const { clock, store } = manual()
        const server = await serve(oneRoute({ ...fixed, clock, store }))
        for (let i = 0; i < 42; i++) await send(server, '/')
        clock.advance(48_000)
        const res = await send(server, '/')
        expect(res.status).toBe(200)
        expect(lines(res, ...RATE_LIMIT_HEADERS)).toEqual([
          'RateLimit-Policy: "100-per-1m-fixed-window";q=100;w=60',
          'RateLimit: "100-per-1m-fixed-window";r=57;t=12',
        ])
      })

      it("'draft-8' on a refusal, with Retry-After rounded up and the default body", async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({ algorithm: 'fixed-window', limit: 1, window: '10s', clock, store }),
        )
        await send(server, '/')
        clock.advance(1_500)
        const res = await send(server, '/')
        expect(res.status).toBe(429)
        expect(lines(res, ...RATE_LIMIT_HEADERS)).toEqual([
          'RateLimit-Policy: "1-per-10s-fixed-window";q=1;w=10',
          'RateLimit: "1-per-10s-fixed-window";r=0;t=9',
          'Retry-After: 9',
        ])
        expect(res.body).toBe('Too Many Requests')
      })

      it.each([
        ['draft-7', ['RateLimit-Policy: 100;w=60', 'RateLimit: limit=100, remaining=57, reset=12']],
        [
          'draft-6',
          [
            'RateLimit-Policy: 100;w=60',
            'RateLimit-Limit: 100',
            'RateLimit-Remaining: 57',
            'RateLimit-Reset: 12',
          ],
        ],
        [
          'legacy',
          ['X-RateLimit-Limit: 100', 'X-RateLimit-Remaining: 57', 'X-RateLimit-Reset: 12'],
        ],
      ] as const)("'%s'", async (headers, expected) => {
        const { clock, store } = manual()
        const server = await serve(oneRoute({ ...fixed, headers, clock, store }))
        for (let i = 0; i < 42; i++) await send(server, '/')
        clock.advance(48_000)
        expect(lines(await send(server, '/'), ...RATE_LIMIT_HEADERS)).toEqual(expected)
      })

      it('false: no RateLimit headers, but a refusal still carries Retry-After', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({ limit: 1, window: '1m', headers: false, clock, store }),
        )
        expect(lines(await send(server, '/'), ...RATE_LIMIT_HEADERS)).toEqual([])
        const refused = await send(server, '/')
        expect(refused.status).toBe(429)
        expect(lines(refused, ...RATE_LIMIT_HEADERS)).toEqual(['Retry-After: 66'])
      })

      it('stacked limiters append list items instead of clobbering each other', async () => {
        const { clock, store } = manual()
        const server = await serve({
          use: [
            {
              rateLimit: {
                name: 'global',
                ...fixed,
                limit: 1000,
                key: keys.global(),
                clock,
                store,
              },
            },
          ],
          routes: [
            {
              method: 'get',
              path: '/',
              use: [
                {
                  rateLimit: {
                    name: 'route',
                    algorithm: 'fixed-window',
                    limit: 5,
                    window: '1s',
                    clock,
                    store,
                  },
                },
              ],
              handler: { kind: 'json' },
            },
          ],
        })
        expect(lines(await send(server, '/'), ...RATE_LIMIT_HEADERS)).toEqual([
          'RateLimit-Policy: "global";q=1000;w=60, "route";q=5;w=1',
          'RateLimit: "global";r=999;t=60, "route";r=4;t=1',
        ])
      })
    })

    it('exposes the decision to the handler', async () => {
      const { clock, store } = manual()
      const server = await serve(
        oneRoute({
          algorithm: 'fixed-window',
          limit: 5,
          window: '1m',
          name: 'api',
          key: keys.global(),
          clock,
          store,
        }),
      )
      await send(server, '/')
      clock.advance(15_000)
      const res = await send(server, '/')
      expect(JSON.parse(res.body)).toEqual({
        rateLimit: expect.objectContaining({
          limit: 5,
          remaining: 3,
          resetMs: 45_000,
          key: 'global',
          policy: 'api',
        }),
      })
    })

    it('several policies: a refusal by one refunds the others, headers list each', async () => {
      const { clock, store } = manual()
      const server = await serve(
        oneRoute({
          policies: [
            { name: 'burst', algorithm: 'fixed-window', limit: 2, window: '1s' },
            { name: 'daily', algorithm: 'fixed-window', limit: 5, window: '1d' },
          ],
          clock,
          store,
        }),
      )
      expect(await statuses(server, '/', 3)).toEqual([200, 200, 429])
      clock.advance(1_000)
      const res = await send(server, '/')
      expect(res.status).toBe(200)
      expect(lines(res, 'RateLimit', 'RateLimit-Policy')).toEqual([
        'RateLimit-Policy: "burst";q=2;w=1, "daily";q=5;w=86400',
        'RateLimit: "burst";r=1;t=1, "daily";r=2;t=86399',
      ])
    })

    it('keyed budgets: each key its own, a missing key the shared fallback', async () => {
      const { clock, store } = manual()
      const server = await serve(
        oneRoute({ limit: 1, window: '1m', key: keys.header('x-api-key'), clock, store }),
      )
      expect(await statuses(server, '/', 2, { 'x-api-key': 'a' })).toEqual([200, 429])
      expect(await statuses(server, '/', 2, { 'x-api-key': 'b' })).toEqual([200, 429])
      expect(await statuses(server, '/', 2)).toEqual([200, 429])
      expect(await statuses(server, '/', 1, { 'x-api-key': '' })).toEqual([429])
    })

    it('a per-route limiter limits only its route', async () => {
      const { clock, store } = manual()
      const server = await serve({
        routes: [
          {
            method: 'get',
            path: '/limited',
            use: [{ rateLimit: { limit: 1, window: '1m', clock, store } }],
            handler: { kind: 'json' },
          },
          { method: 'get', path: '/free', handler: { kind: 'json' } },
        ],
      })
      expect(await statuses(server, '/limited', 2)).toEqual([200, 429])
      const free = await send(server, '/free')
      expect(free.status).toBe(200)
      expect(lines(free, ...RATE_LIMIT_HEADERS)).toEqual([])
      expect(await statuses(server, '/free', 3)).toEqual([200, 200, 200])
    })

    it('route keys: one budget per route pattern, not per URL', async () => {
      const { clock, store } = manual()
      const server = await serve({
        routes: [
          {
            method: 'get',
            path: '/users/:id',
            use: [{ rateLimit: { limit: 2, window: '1m', key: keys.route(), clock, store } }],
            handler: { kind: 'json' },
          },
        ],
      })
      expect((await send(server, '/users/1')).status).toBe(200)
      const second = await send(server, '/users/2')
      expect(JSON.parse(second.body).rateLimit.key).toBe('GET /users/:id')
      expect((await send(server, '/users/3')).status).toBe(429)
    })

    it('cost: a request takes as many permits as it says', async () => {
      const { clock, store } = manual()
      const server = await serve(
        oneRoute({
          limit: 5,
          window: '1m',
          cost: (req) => Number(harness.header(req, 'x-cost') ?? 1),
          clock,
          store,
        }),
      )
      const first = await send(server, '/', { headers: { 'x-cost': '3' } })
      expect([first.status, JSON.parse(first.body).rateLimit.remaining]).toEqual([200, 2])
      expect((await send(server, '/', { headers: { 'x-cost': '3' } })).status).toBe(429)
      const last = await send(server, '/', { headers: { 'x-cost': '2' } })
      expect([last.status, JSON.parse(last.body).rateLimit.remaining]).toEqual([200, 0])
    })

    it('skip: skipped requests are neither counted nor limited', async () => {
      const { clock, store } = manual()
      const server = await serve(
        oneRoute({
          limit: 1,
          window: '1m',
          skip: async (req) => harness.header(req, 'x-internal') === 'yes',
          clock,
          store,
        }),
      )
      const internal = { 'x-internal': 'yes' }
      const skipped = await send(server, '/', { headers: internal })
      expect([skipped.status, JSON.parse(skipped.body).rateLimit]).toEqual([200, null])
      expect(lines(skipped, ...RATE_LIMIT_HEADERS)).toEqual([])
      expect(await statuses(server, '/', 2)).toEqual([200, 429])
      expect(await statuses(server, '/', 2, internal)).toEqual([200, 200])
    })

    it('refundWhen: permits come back for responses it approves (count only failures)', async () => {
      const { clock, store } = manual()
      const limiter: MiddlewareSpec = {
        rateLimit: {
          limit: 2,
          window: '1m',
          key: keys.global(),
          refundWhen: (req, res) => harness.status(req, res) < 400,
          clock,
          store,
        },
      }
      const server = await serve({
        use: [limiter],
        routes: [
          { method: 'get', path: '/ok', handler: { kind: 'json' } },
          { method: 'get', path: '/fail', handler: { kind: 'status', status: 500 } },
        ],
      })
      for (let i = 0; i < 5; i++) {
        expect((await send(server, '/ok')).status).toBe(200)
        await settle()
      }
      expect((await send(server, '/fail')).status).toBe(500)
      await settle()
      expect((await send(server, '/fail')).status).toBe(500)
      await settle()
      expect((await send(server, '/ok')).status).toBe(429)
    })

    it('statusCode and message shape the refusal', async () => {
      const { clock, store } = manual()
      const server = await serve(
        oneRoute({
          algorithm: 'fixed-window',
          limit: 1,
          window: '1m',
          statusCode: 503,
          message: { error: 'slow down' },
          clock,
          store,
        }),
      )
      await send(server, '/')
      const refused = await send(server, '/')
      expect(refused.status).toBe(503)
      expect(JSON.parse(refused.body)).toEqual({ error: 'slow down' })
      expect(refused.headers['retry-after']).toBe('60')
    })

    describe('waiting mode', () => {
      const waiting = (clock: ManualClock, store: MemoryStore, timeout: Duration, maxQueue = 5) =>
        oneRoute({
          algorithm: 'fixed-window',
          limit: 1,
          window: '1s',
          wait: { timeout, maxQueue },
          clock,
          store,
        })

      it('delays a request over the limit until its permit is due', async () => {
        const { clock, store } = manual()
        const server = await serve(waiting(clock, store, '2s'))
        expect((await send(server, '/')).status).toBe(200)
        const delayed = start(server, '/')
        await until(() => clock.pendingSleeps === 1, 'the request waits')
        clock.advance(1_000)
        const res = await delayed.replied
        expect(res.status).toBe(200)
        expect(res.headers.ratelimit).toBe('"1-per-1s-fixed-window";r=0;t=1')
      })

      it('serves queued requests in order, and refuses when the queue is full', async () => {
        const { clock, store } = manual()
        const server = await serve(waiting(clock, store, '5s', 2))
        await send(server, '/')
        const second = start(server, '/')
        await until(() => clock.pendingSleeps === 1, 'the head waits')
        const third = start(server, '/')
        await until(() => clock.pendingSleeps === 2, 'the second waits its turn')
        const refused = await send(server, '/')
        expect(refused.status).toBe(429)
        expect(refused.headers['retry-after']).toBeDefined()
        clock.advance(1_000)
        expect((await second.replied).status).toBe(200)
        await until(() => clock.pendingSleeps === 1, 'the next head waits')
        clock.advance(1_000)
        expect((await third.replied).status).toBe(200)
      })

      it('refuses at once a request whose wait would pass the timeout', async () => {
        const { clock, store } = manual()
        const server = await serve(waiting(clock, store, '500ms'))
        await send(server, '/')
        const res = await send(server, '/')
        expect(res.status).toBe(429)
        expect(res.headers['retry-after']).toBe('1')
        expect(clock.pendingSleeps).toBe(0)
      })

      it('a client that disconnects while queued leaves the queue at once', async () => {
        const { clock, store } = manual()
        const server = await serve(waiting(clock, store, '5s', 1))
        await send(server, '/')
        const quitter = start(server, '/')
        await until(() => clock.pendingSleeps === 1, 'the request waits')
        quitter.abort()
        await until(() => clock.pendingSleeps === 0, 'the request left the queue')
        // The queue (of one) is free again: the next request waits instead of being refused.
        const next = start(server, '/')
        await until(() => clock.pendingSleeps === 1, 'the next request waits')
        clock.advance(1_000)
        expect((await next.replied).status).toBe(200)
      })
    })

    describe('client address', () => {
      const ipLimited = (clock: ManualClock, store: MemoryStore, trustProxy: boolean): AppSpec => ({
        trustProxy,
        routes: [
          {
            method: 'get',
            path: '/',
            use: [{ rateLimit: { limit: 1, window: '1m', clock, store } }],
            handler: { kind: 'json' },
          },
        ],
      })
      const from = (address: string) => ({ 'x-forwarded-for': address })

      it('a spoofed X-Forwarded-For does not change the key while proxies are not trusted', async () => {
        const { clock, store } = manual()
        const server = await serve(ipLimited(clock, store, false))
        const first = await send(server, '/', { headers: from('198.51.100.1') })
        expect(first.status).toBe(200)
        expect(JSON.parse(first.body).rateLimit.key).toBe('127.0.0.1')
        expect((await send(server, '/', { headers: from('198.51.100.2') })).status).toBe(429)
        expect((await send(server, '/', { headers: from('198.51.100.3') })).status).toBe(429)
      })

      it('an IPv4-mapped IPv6 address shares the IPv4 client bucket', async () => {
        const { clock, store } = manual()
        const server = await serve(ipLimited(clock, store, true))
        const first = await send(server, '/', { headers: from('203.0.113.7') })
        expect(JSON.parse(first.body).rateLimit.key).toBe('203.0.113.7')
        expect((await send(server, '/', { headers: from('::ffff:203.0.113.7') })).status).toBe(429)
        expect((await send(server, '/', { headers: from('::ffff:203.0.113.8') })).status).toBe(200)
      })

      it('IPv6 clients are grouped by /56', async () => {
        const { clock, store } = manual()
        const server = await serve(ipLimited(clock, store, true))
        const first = await send(server, '/', { headers: from('2001:db8:0:1ff::1') })
        expect(JSON.parse(first.body).rateLimit.key).toBe('2001:db8:0:100::/56')
        expect((await send(server, '/', { headers: from('2001:db8:0:100::2') })).status).toBe(429)
        expect((await send(server, '/', { headers: from('2001:db8:0:200::1') })).status).toBe(200)
      })
    })

    describe('bulkhead', () => {
      const guarded = (
        store: MemoryStore,
        handler: HandlerSpec,
        options: BulkheadOptions = {},
      ): AppSpec => ({
        routes: [
          {
            method: 'get',
            path: '/work',
            use: [{ bulkhead: { max: 1, store, ...options } }],
            handler,
          },
          { method: 'get', path: '/other', handler: { kind: 'json' } },
        ],
      })

      it('answers 503 + Retry-After when full, and the slot comes back after the response', async () => {
        const store = memoryStore()
        const work = gate()
        const server = await serve(guarded(store, { kind: 'hold', gate: work }))
        const first = start(server, '/work')
        await until(() => work.arrived === 1, 'the first request holds the slot')
        const refused = await send(server, '/work')
        expect(refused.status).toBe(503)
        expect(lines(refused, ...RATE_LIMIT_HEADERS)).toEqual([
          'RateLimit-Policy: "1-concurrent";q=1;qu="concurrent-requests"',
          'RateLimit: "1-concurrent";r=0',
          'Retry-After: 1',
        ])
        expect(refused.body).toBe('Service Unavailable')
        work.open()
        const done = await first.replied
        expect(done.status).toBe(200)
        expect(lines(done, 'RateLimit')).toEqual(['RateLimit: "1-concurrent";r=0'])
        await until(() => store.inFlight === 0, 'the slot is released')
        expect((await send(server, '/work')).status).toBe(200)
      })

      it('reconfigure raises max at once; lowered below the slots held it refuses newcomers', async () => {
        const store = memoryStore()
        const work = gate()
        const app = guarded(store, { kind: 'hold', gate: work })
        const server = await serve(app)
        const first = start(server, '/work')
        await until(() => work.arrived === 1, 'the first request holds the slot')
        const spec = app.routes[0]!.use![0]!
        const handles = server.middleware?.(spec) as {
          reconfigure(options: { max: number }): void
        }
        handles.reconfigure({ max: 2 })
        const second = start(server, '/work')
        await until(() => work.arrived === 2, 'a second slot once max is 2')
        handles.reconfigure({ max: 1 })
        expect((await send(server, '/work')).status).toBe(503)
        work.open()
        expect([(await first.replied).status, (await second.replied).status]).toEqual([200, 200])
        await until(() => store.inFlight === 0, 'both slots are released')
      })

      it('holds the slot of a client that hangs up until its handler is done; its signal aborts', async () => {
        const store = memoryStore()
        const work = gate()
        const server = await serve(guarded(store, { kind: 'hold', gate: work }))
        const quitter = start(server, '/work')
        await until(() => work.arrived === 1, 'the request is in the handler')
        const signal = work.signals[0]
        expect(signal?.aborted).toBe(false)
        quitter.abort()
        await until(() => signal?.aborted === true, "the handler's signal aborted")
        expect((signal?.reason as Error | undefined)?.name).toBe('AbortError')
        // The handler still runs: what the bulkhead guards must not see another one.
        expect(store.inFlight).toBe(1)
        expect((await send(server, '/work')).status).toBe(503)
        work.open()
        await until(() => store.inFlight === 0, 'the slot is released once the handler is done')
        expect((await send(server, '/work')).status).toBe(200)
        await until(() => store.inFlight === 0, 'the second slot is released')
      })

      it('frees the slot after a throwing handler', async () => {
        const store = memoryStore()
        const server = await serve(guarded(store, { kind: 'throw' }))
        expect((await send(server, '/work')).status).toBe(500)
        await until(() => store.inFlight === 0, 'the slot is released')
        expect((await send(server, '/work')).status).toBe(500)
      })

      it('holds the slot while a body streams, and frees it when the stream ends', async () => {
        const store = memoryStore()
        const body = gate()
        const server = await serve(guarded(store, { kind: 'stream', gate: body }))
        const streaming = start(server, '/work')
        await streaming.firstByte
        await until(() => body.arrived === 1, 'the first chunk is out')
        expect(store.inFlight).toBe(1)
        expect((await send(server, '/work')).status).toBe(503)
        body.open()
        const done = await streaming.replied
        expect(done.body).toBe('first\nlast\n')
        await until(() => store.inFlight === 0, 'the slot is released')
        expect(store.inFlight).toBe(0)
      })

      it('queues FIFO up to maxQueue; a queued client that leaves frees its place', async () => {
        const { clock, store } = manual()
        const work = gate()
        // With a queueTimeout on the manual clock, each queued request is one pending sleep.
        const server = await serve(
          guarded(
            store,
            { kind: 'hold', gate: work },
            // No holdTimeout: the clock's sleepers are the queue's only.
            { maxQueue: 1, queueTimeout: '1h', holdTimeout: false, clock },
          ),
        )
        const first = start(server, '/work')
        await until(() => work.arrived === 1, 'the first request holds the slot')
        const quitter = start(server, '/work')
        await until(() => clock.pendingSleeps === 1, 'the second request is queued')
        expect((await send(server, '/work')).status).toBe(503)
        quitter.abort()
        await until(() => clock.pendingSleeps === 0, 'the quitter left the queue')
        const queued = start(server, '/work')
        await until(() => clock.pendingSleeps === 1, 'the third request is queued')
        expect(work.arrived).toBe(1)
        work.open()
        expect((await first.replied).status).toBe(200)
        expect((await queued.replied).status).toBe(200)
        expect(work.arrived).toBe(2)
        await until(() => store.inFlight === 0, 'every slot is released')
      })

      it('refuses a queued request whose queueTimeout passes', async () => {
        const { clock, store } = manual()
        const work = gate()
        const server = await serve(
          guarded(
            store,
            { kind: 'hold', gate: work },
            { maxQueue: 1, queueTimeout: '2s', holdTimeout: false, clock },
          ),
        )
        const first = start(server, '/work')
        await until(() => work.arrived === 1, 'the first request holds the slot')
        const queued = start(server, '/work')
        await until(() => clock.pendingSleeps === 1, 'the second request is queued')
        clock.advance(2_000)
        const refused = await queued.replied
        expect(refused.status).toBe(503)
        expect(refused.headers['retry-after']).toBe('1')
        work.open()
        expect((await first.replied).status).toBe(200)
      })

      it('1,000 clients aborting mid-request: the queued leave at once, the running hold their slots until done', async () => {
        const { clock, store } = manual()
        const work = gate()
        const server = await serve(
          guarded(
            store,
            { kind: 'hold', gate: work },
            { max: 600, maxQueue: 400, queueTimeout: '1h', holdTimeout: false, clock },
          ),
        )
        const clients = Array.from({ length: 1_000 }, () => start(server, '/work'))
        await until(
          () => work.arrived === 600 && clock.pendingSleeps === 400,
          '600 requests hold slots and 400 wait',
        )
        expect(store.inFlight).toBe(600)
        for (const client of clients) client.abort()
        await until(
          () => clock.pendingSleeps === 0 && work.signals.every((signal) => signal?.aborted),
          'every queued request left and every handler was told',
        )
        expect([store.inFlight, work.arrived]).toEqual([600, 600])
        work.open()
        await until(() => store.inFlight === 0, 'every slot is freed once its handler is done')
        expect((await send(server, '/work')).status).toBe(200)
        await until(() => store.inFlight === 0, 'the last slot is released')
      })

      it('holdTimeout: a response held past it is destroyed and its slot freed', async () => {
        const { clock, store } = manual()
        const body = gate()
        const server = await serve(
          guarded(store, { kind: 'stream', gate: body }, { holdTimeout: '10s', clock }),
        )
        // A client that stops reading holds the slot as long as the response is open.
        const slow = start(server, '/work')
        await slow.firstByte
        await until(() => body.arrived === 1, 'the first chunk is out')
        await clock.advanceAsync(9_999)
        expect(store.inFlight).toBe(1)
        expect((await send(server, '/work')).status).toBe(503)
        await clock.advanceAsync(1)
        await expect(slow.replied).rejects.toThrow()
        await until(() => store.inFlight === 0, 'the slot is freed')
        expect((body.signals[0]?.reason as Error | undefined)?.name).toBe('TimeoutError')
        const next = start(server, '/work')
        expect((await next.firstByte).statusCode).toBe(200)
        body.open()
        expect((await next.replied).body).toBe('first\nlast\n')
        await until(() => store.inFlight === 0, 'the last slot is released')
      })
    })

    describe('composition (issue 10)', () => {
      it('unnamed limits on one shared store never share state, and get names of their own', async () => {
        const { clock, store } = manual()
        const server = await serve({
          use: [{ rateLimit: { limit: 100, window: '1m', clock, store } }],
          routes: [
            {
              method: 'get',
              path: '/',
              use: [
                {
                  rateLimit: { limit: 3, window: '10s', algorithm: 'fixed-window', clock, store },
                },
              ],
              handler: { kind: 'json' },
            },
          ],
        })
        expect(await statuses(server, '/', 5)).toEqual([200, 200, 200, 429, 429])
        const res = await send(server, '/')
        expect(lines(res, 'RateLimit-Policy', 'RateLimit')).toEqual([
          'RateLimit-Policy: "100-per-1m";q=100;w=60, "3-per-10s-fixed-window";q=3;w=10',
          'RateLimit: "100-per-1m";r=94;t=66, "3-per-10s-fixed-window";r=0;t=10',
        ])
      })

      it('two sliding windows on one store count each request once, and r is never negative', async () => {
        const { clock, store } = manual()
        const server = await serve({
          use: [
            { rateLimit: { limit: 100, window: '1m', clock, store } },
            { rateLimit: { limit: 3, window: '1m', clock, store } },
          ],
          routes: [{ method: 'get', path: '/', handler: { kind: 'json' } }],
        })
        expect(await statuses(server, '/', 3)).toEqual([200, 200, 200])
        const refused = await send(server, '/')
        expect(refused.status).toBe(429)
        expect(lines(refused, 'RateLimit')).toEqual([
          'RateLimit: "100-per-1m";r=96;t=66, "3-per-1m";r=0;t=66',
        ])
      })

      it('two unnamed bulkheads on one store are two bulkheads', async () => {
        const store = memoryStore()
        const a = gate()
        const b = gate()
        const server = await serve({
          routes: [
            {
              method: 'get',
              path: '/a',
              use: [{ bulkhead: { max: 2, store } }],
              handler: { kind: 'hold', gate: a },
            },
            {
              method: 'get',
              path: '/b',
              use: [{ bulkhead: { max: 1, store } }],
              handler: { kind: 'hold', gate: b },
            },
          ],
        })
        const held = [start(server, '/a'), start(server, '/a'), start(server, '/b')]
        await until(() => a.arrived === 2 && b.arrived === 1, 'both bulkheads are full')
        const refusedA = await send(server, '/a')
        const refusedB = await send(server, '/b')
        expect([refusedA.status, refusedB.status]).toEqual([503, 503])
        expect(refusedA.headers.ratelimit).toBe('"2-concurrent";r=0')
        expect(refusedB.headers.ratelimit).toBe('"1-concurrent";r=0')
        a.open()
        b.open()
        for (const request of held) expect((await request.replied).status).toBe(200)
        await until(() => store.inFlight === 0, 'every slot is released')
      })

      it('the same middleware mounted twice on one path counts a request once', async () => {
        const { clock, store } = manual()
        const limiter: MiddlewareSpec = { rateLimit: { limit: 2, window: '1m', clock, store } }
        const server = await serve({
          use: [limiter],
          routes: [{ method: 'get', path: '/', use: [limiter], handler: { kind: 'json' } }],
        })
        const first = await send(server, '/')
        expect(JSON.parse(first.body).rateLimit.remaining).toBe(1)
        expect(lines(first, 'RateLimit')).toEqual(['RateLimit: "2-per-1m";r=1;t=66'])
        expect(await statuses(server, '/', 2)).toEqual([200, 429])
      })

      it('a refund after the window ended never credits the next one', async () => {
        const { clock, store } = manual()
        const slow = gate()
        const limiter: MiddlewareSpec = {
          rateLimit: {
            algorithm: 'fixed-window',
            limit: 1,
            window: '1s',
            key: keys.global(),
            // Only the slow request asks for its permit back.
            refundWhen: (req) => harness.header(req, 'x-refund') === 'yes',
            clock,
            store,
          },
        }
        const server = await serve({
          use: [limiter],
          routes: [
            { method: 'get', path: '/slow', handler: { kind: 'hold', gate: slow } },
            { method: 'get', path: '/', handler: { kind: 'json' } },
          ],
        })
        const pending = start(server, '/slow', { 'x-refund': 'yes' })
        await until(() => slow.arrived === 1, 'the slow request runs')
        clock.advance(1_000)
        expect((await send(server, '/')).status).toBe(200)
        await settle()
        slow.open()
        expect((await pending.replied).status).toBe(200)
        await settle()
        expect((await send(server, '/')).status).toBe(429)
      })

      it('works with a store that answers with thenables that are not promises', async () => {
        const { clock, store } = manual()
        const thenable = <T>(value: T) =>
          ({
            // biome-ignore lint/suspicious/noThenProperty: the point is a non-native thenable.
            then: (resolve: (v: T) => unknown) => resolve(value),
          }) as unknown as PromiseLike<T>
        const lazy = {
          take: (...args: Parameters<typeof store.take>) => thenable(store.take(...args)),
          refund: (...args: Parameters<typeof store.refund>) => thenable(store.refund(...args)),
          force: (...args: Parameters<typeof store.force>) => thenable(store.force(...args)),
          block: (...args: Parameters<typeof store.block>) => thenable(store.block(...args)),
          release: (...args: Parameters<typeof store.release>) => thenable(store.release(...args)),
          get: (...args: Parameters<typeof store.get>) => thenable(store.get(...args)),
          reset: (...args: Parameters<typeof store.reset>) => thenable(store.reset(...args)),
          resetAll: () => thenable(store.resetAll()),
        }
        const server = await serve(oneRoute({ limit: 1, window: '1m', clock, store: lazy }))
        expect(await statuses(server, '/', 2)).toEqual([200, 429])
      })
    })

    describe('header times agree with Retry-After (issue 10)', () => {
      it.each([
        ['token-bucket', '"10-per-1m-token-bucket";r=0;t=6', '6'],
        ['warm-up', '"10-per-1m-warm-up-0s";r=0;t=6', '6'],
        ['sliding-window', '"10-per-1m";r=0;t=66', '66'],
        ['fixed-window', '"10-per-1m-fixed-window";r=0;t=60', '60'],
      ] as const)('%s: t of the refusing policy is Retry-After', async (algorithm, item, retry) => {
        const { clock, store } = manual()
        const warmUp = algorithm === 'warm-up' ? { warmUp: 0 } : {}
        const server = await serve(
          oneRoute({ algorithm, limit: 10, window: '1m', ...warmUp, clock, store }),
        )
        for (let i = 0; i < 10; i++) await send(server, '/')
        const refused = await send(server, '/')
        expect(refused.status).toBe(429)
        expect([refused.headers.ratelimit, refused.headers['retry-after']]).toEqual([item, retry])
      })

      it('draft-7: reset agrees with Retry-After; single values show the tightest policy', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({
            headers: 'draft-7',
            policies: [
              { algorithm: 'token-bucket', limit: 10, window: '1m' },
              { algorithm: 'fixed-window', limit: 10, window: '1s' },
              { algorithm: 'fixed-window', limit: 50, window: '1h' },
            ],
            clock,
            store,
          }),
        )
        const first = await send(server, '/')
        // Equal quotas are listed once (the drafts forbid two items with one quota).
        expect(lines(first, 'RateLimit-Policy', 'RateLimit')).toEqual([
          'RateLimit-Policy: 10;w=60, 50;w=3600',
          'RateLimit: limit=10, remaining=9, reset=6',
        ])
        for (let i = 0; i < 9; i++) {
          await send(server, '/')
          clock.advance(100)
        }
        const refused = await send(server, '/')
        expect(refused.status).toBe(429)
        expect(lines(refused, 'RateLimit', 'Retry-After')).toEqual([
          'RateLimit: limit=10, remaining=0, reset=6',
          'Retry-After: 6',
        ])
      })

      it('draft-6 lists equal quotas once, too', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({
            headers: 'draft-6',
            policies: [
              { name: 'second', algorithm: 'fixed-window', limit: 10, window: '1s' },
              { name: 'minute', algorithm: 'fixed-window', limit: 10, window: '1m' },
            ],
            clock,
            store,
          }),
        )
        expect(lines(await send(server, '/'), 'RateLimit-Policy')).toEqual([
          'RateLimit-Policy: 10;w=60',
        ])
      })
    })

    describe('hardening (issue 11)', () => {
      it('a pipelined request whose client hangs up frees its bulkhead slot', async () => {
        const store = memoryStore()
        const other = gate()
        const work = gate()
        work.open()
        const server = await serve({
          routes: [
            { method: 'get', path: '/other', handler: { kind: 'hold', gate: other } },
            {
              method: 'get',
              path: '/work',
              use: [{ bulkhead: { max: 4, store } }],
              handler: { kind: 'hold', gate: work },
            },
          ],
        })
        // Each /work answers at once but waits behind /other on its connection, which the
        // client then closes: neither 'finish' nor 'close' comes for the /work response.
        for (let i = 1; i <= 4; i++) {
          await pipelineThenHangUp(
            server,
            ['/other', '/work'],
            () => other.arrived === i && work.arrived === i,
          )
        }
        await until(() => store.inFlight === 0, 'the hung-up pipelined requests free their slots')
        expect((await send(server, '/work')).status).toBe(200)
        other.open()
      })

      it('a throwing message after an asynchronous decision answers 500; the server lives on', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({
            limit: 1,
            window: '1m',
            key: async () => 'k',
            message: () => {
              throw new Error('message failed')
            },
            clock,
            store,
          }),
        )
        expect(await statuses(server, '/', 3)).toEqual([200, 500, 500])
      })

      it('a message that returns neither text nor an object is an error, not an empty 204', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({ limit: 1, window: '1m', message: () => null as never, clock, store }),
        )
        expect(await statuses(server, '/', 2)).toEqual([200, 500])
      })

      it('a very long key is kept as its SHA-256, still one budget per value', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({ limit: 1, window: '1m', key: keys.header('x-api-key'), clock, store }),
        )
        const long = 'k'.repeat(10_000)
        const first = await send(server, '/', { headers: { 'x-api-key': long } })
        expect(JSON.parse(first.body).rateLimit.key).toMatch(/^sha256:[\w-]{43}$/)
        expect((await send(server, '/', { headers: { 'x-api-key': long } })).status).toBe(429)
        expect((await send(server, '/', { headers: { 'x-api-key': `${long}2` } })).status).toBe(200)
      })
    })

    describe('cost budgets settled after the response (issue 26)', () => {
      const budget = (
        clock: ManualClock,
        store: Store,
        settleWith: () => KeyedCost,
      ): MiddlewareSpec => ({
        rateLimit: {
          key: keys.global(),
          policies: [
            { name: 'requests', limit: 60, window: '1m' },
            { name: 'tokens', limit: 10_000, window: '1m', algorithm: 'token-bucket' },
          ],
          cost: { requests: 1, tokens: 1000 },
          settle: settleWith,
          clock,
          store,
        },
      })

      it('a streamed 10k-token answer reserved at 1k is charged 10k at its end; the next waits out the debt', async () => {
        const { clock, store } = manual()
        const body = gate()
        const limited = budget(clock, store, () => ({ requests: 1, tokens: 11_000 }))
        const server = await serve({
          routes: [
            {
              method: 'get',
              path: '/chat',
              use: [limited],
              handler: { kind: 'stream', gate: body },
            },
            { method: 'get', path: '/ask', use: [limited], handler: { kind: 'json' } },
          ],
        })
        const { policies } = server.middleware!(limited) as { policies: Policy[] }
        const streaming = start(server, '/chat')
        await streaming.firstByte
        await until(() => body.arrived === 1, 'the first chunk is out')
        // While it streams, only the estimate is taken.
        expect(store.get('global', policies).map((r) => r.remaining)).toEqual([59, 9000])
        body.open()
        expect((await streaming.replied).body).toBe('first\nlast\n')
        await until(
          () => store.get('global', policies)[1]!.remaining === 0,
          'the answer is settled',
        )
        // 1,000 tokens beyond the bucket: 12 s until the next estimate fits.
        const refused = await send(server, '/ask')
        expect([refused.status, refused.headers['retry-after']]).toEqual([429, '12'])
        clock.advance(12_000)
        expect((await send(server, '/ask')).status).toBe(200)
      })

      it('settles below the estimate by a refund, and settles an abandoned answer too', async () => {
        const { clock, store } = manual()
        const [short, long] = [gate(), gate()]
        let used = 300
        const limited = budget(clock, store, () => ({ requests: 1, tokens: used }))
        const server = await serve({
          routes: [
            {
              method: 'get',
              path: '/short',
              use: [limited],
              handler: { kind: 'stream', gate: short },
            },
            {
              method: 'get',
              path: '/long',
              use: [limited],
              handler: { kind: 'stream', gate: long },
            },
          ],
        })
        const { policies } = server.middleware!(limited) as { policies: Policy[] }
        const first = start(server, '/short')
        await first.firstByte
        short.open()
        await first.replied
        await until(() => store.get('global', policies)[1]!.remaining === 9700, 'the refund')
        // A client that leaves mid-stream: what it cost so far is still charged.
        used = 5000
        const left = start(server, '/long')
        await left.firstByte
        await until(() => long.arrived === 1, 'the second answer streams')
        left.abort()
        // Its handler may still be streaming into the void (workerd sees the client leave
        // only at the stream's end): once the response is over either way, it is settled.
        long.open()
        await until(
          () => store.get('global', policies)[1]!.remaining === 4700,
          'the abandoned answer is settled',
        )
      })

      it('keys.first tags its keys; get and resetKey take the key the decision shows', async () => {
        const { clock, store } = manual()
        const limited: MiddlewareSpec = {
          rateLimit: {
            limit: 1,
            window: '1m',
            key: keys.first(keys.header('x-api-key'), keys.ip()),
            clock,
            store,
          },
        }
        const server = await serve({
          use: [limited],
          routes: [{ method: 'get', path: '/', handler: { kind: 'json' } }],
        })
        const first = await send(server, '/', { headers: { 'x-api-key': 'ann' } })
        const key = JSON.parse(first.body).rateLimit.key as string
        expect(key).not.toBe('ann')
        expect((await send(server, '/', { headers: { 'x-api-key': 'ann' } })).status).toBe(429)
        const handles = server.middleware?.(limited) as {
          get(key: string): MaybePromise<readonly { remaining: number }[]>
          resetKey(key: string): MaybePromise<void>
        }
        expect((await handles.get(key))[0]?.remaining).toBe(0)
        await handles.resetKey(key)
        expect((await send(server, '/', { headers: { 'x-api-key': 'ann' } })).status).toBe(200)
      })

      it('get and resetKey normalise a long key as its requests were', async () => {
        const { clock, store } = manual()
        const limited: MiddlewareSpec = {
          rateLimit: { limit: 1, window: '1m', key: keys.header('x-api-key'), clock, store },
        }
        const server = await serve({
          use: [limited],
          routes: [{ method: 'get', path: '/', handler: { kind: 'json' } }],
        })
        const long = 'k'.repeat(1000)
        await send(server, '/', { headers: { 'x-api-key': long } })
        const handles = server.middleware?.(limited) as {
          get(key: string): MaybePromise<readonly { remaining: number }[]>
          resetKey(key: string): MaybePromise<void>
        }
        expect((await handles.get(long))[0]?.remaining).toBe(0)
        await handles.resetKey(long)
        expect((await send(server, '/', { headers: { 'x-api-key': long } })).status).toBe(200)
      })

      it('keyFor(req) is the key the decision shows, tag included; get and resetKey take it', async () => {
        const { clock, store } = manual()
        // What the middleware's callbacks receive is what keyFor takes (req, ctx, c).
        const seen: unknown[] = []
        const limited: MiddlewareSpec = {
          rateLimit: {
            limit: 1,
            window: '1m',
            key: keys.first(keys.header('x-api-key'), keys.ip()),
            skip: (req) => {
              seen.push(req)
              return false
            },
            clock,
            store,
          },
        }
        const server = await serve({
          use: [limited],
          routes: [{ method: 'get', path: '/', handler: { kind: 'json' } }],
        })
        const first = await send(server, '/', { headers: { 'x-api-key': 'ann' } })
        const shown = JSON.parse(first.body).rateLimit.key as string
        const handles = server.middleware?.(limited) as {
          keyFor(req: unknown): MaybePromise<string>
          get(key: string): MaybePromise<readonly { remaining: number }[]>
          resetKey(key: string): MaybePromise<void>
        }
        const key = await handles.keyFor(seen[0])
        expect(key).toBe(shown)
        expect(key).not.toBe('ann')
        expect((await handles.get(key))[0]?.remaining).toBe(0)
        expect((await send(server, '/', { headers: { 'x-api-key': 'ann' } })).status).toBe(429)
        await handles.resetKey(key)
        expect((await handles.get(key))[0]?.remaining).toBe(1)
        expect((await send(server, '/', { headers: { 'x-api-key': 'ann' } })).status).toBe(200)
      })

      it("reconfigure changes the limit in place, carrying each key's state over", async () => {
        const { clock, store } = manual()
        const limited: MiddlewareSpec = {
          rateLimit: {
            name: 'api',
            algorithm: 'fixed-window',
            limit: 2,
            window: '1m',
            clock,
            store,
          },
        }
        const server = await serve({
          use: [limited],
          routes: [{ method: 'get', path: '/', handler: { kind: 'json' } }],
        })
        expect(await statuses(server, '/', 2)).toEqual([200, 200])
        const handles = server.middleware?.(limited) as {
          reconfigure(options: RateLimitOptions, how?: { carry?: string }): void
        }
        expect(() => handles.reconfigure({ algorithm: 'token-bucket', limit: 4 })).toThrow(
          /"algorithm" must stay 'fixed-window'/,
        )
        // Proportional: 2 of 2 used is 4 of 4 used; no fresh budget for anyone.
        handles.reconfigure({ algorithm: 'fixed-window', limit: 4, window: '1m' })
        const refused = await send(server, '/')
        expect(refused.status).toBe(429)
        expect(lines(refused, 'RateLimit-Policy')).toEqual(['RateLimit-Policy: "api";q=4;w=60'])
        // Additive: the 2 permits added are free at once.
        handles.reconfigure(
          { algorithm: 'fixed-window', limit: 6, window: '1m' },
          { carry: 'additive' },
        )
        expect(await statuses(server, '/', 3)).toEqual([200, 200, 429])
      })

      it('resetKey with a limit per request forgets the key under every plan it met', async () => {
        const { clock, store } = manual()
        const limited: MiddlewareSpec = {
          rateLimit: {
            limit: (req) => Number(harness.header(req, 'x-plan')),
            window: '1m',
            key: keys.global(),
            clock,
            store,
          },
        }
        const server = await serve({
          use: [limited],
          routes: [{ method: 'get', path: '/', handler: { kind: 'json' } }],
        })
        // More plans than the middleware keeps compiled: every one still holds the key.
        for (let plan = 1; plan <= 1100; plan++) {
          await send(server, '/', { headers: { 'x-plan': String(plan) } })
        }
        const handles = server.middleware?.(limited) as {
          resetKey(key: string): MaybePromise<void>
        }
        await handles.resetKey('global')
        // Plan 1100 came after the first 1,000 the middleware remembers.
        expect((await send(server, '/', { headers: { 'x-plan': '1100' } })).status).toBe(200)
        expect((await send(server, '/', { headers: { 'x-plan': '1' } })).status).toBe(200)
      })
    })

    describe('one answer, on every adapter (issues 23 and 24)', () => {
      it('refundWhen never refunds a response that never finished (destroyed, then ended)', async () => {
        const { clock, store } = manual()
        const limited: MiddlewareSpec = {
          rateLimit: {
            limit: 1,
            window: '1m',
            key: keys.global(),
            refundWhen: () => true,
            clock,
            store,
          },
        }
        const server = await serve({
          onError: () => {},
          routes: [
            { method: 'get', path: '/destroy', use: [limited], handler: { kind: 'destroy' } },
            { method: 'get', path: '/', use: [limited], handler: { kind: 'json' } },
          ],
        })
        // The client gets a broken answer (or none); what counts is that nothing came back.
        await send(server, '/destroy').catch(() => {})
        // Time for the server to see the response close, and to refund if it wrongly would.
        await settle()
        await settle()
        expect((await send(server, '/')).status).toBe(429)
      })

      it('a factory handed to the framework uncalled fails saying so', async () => {
        const errors: unknown[] = []
        const server = await serve({
          onError: (error) => errors.push(error),
          use: [{ uncalled: 'rateLimit' }],
          routes: [{ method: 'get', path: '/', handler: { kind: 'json' } }],
        })
        expect((await send(server, '/')).status).toBe(500)
        expect(String((errors[0] as Error | undefined)?.message)).toMatch(
          /^rateLimit: options must be a plain object, got .*: was rateLimit handed over without being called\? Write rateLimit\(\{ \.\.\. \}\)\.$/,
        )
      })

      it('a throwing key function fails naming the "key" option', async () => {
        const errors: unknown[] = []
        const server = await serve({
          ...oneRoute({
            key: () => {
              throw new Error('no key today')
            },
          }),
          onError: (error) => errors.push(error),
        })
        expect((await send(server, '/')).status).toBe(500)
        expect((errors[0] as Error | undefined)?.message).toBe(
          'rateLimit: the "key" function failed: no key today',
        )
      })

      it('a custom key that is an IPv4-mapped address with its port is reported as one', async () => {
        const seen = watchWarnings()
        try {
          const server = await serve(oneRoute({ limit: 10, key: () => '::ffff:127.0.0.1:42780' }))
          expect((await send(server, '/')).status).toBe(200)
          expect(seen.given.map(([code]) => code)).toEqual(['ERR_SLUICE_KEY_WITH_PORT'])
        } finally {
          seen.stop()
        }
      })

      it('validate: an X-Forwarded-For while no proxy is trusted is reported once', async () => {
        const seen = watchWarnings()
        try {
          const server = await serve(oneRoute({ limit: 10, validate: true } as RateLimitOptions))
          for (let i = 0; i < 2; i++) {
            const res = await send(server, '/', { headers: { 'x-forwarded-for': '203.0.113.9' } })
            expect(res.status).toBe(200)
          }
          expect(seen.given.map(([code]) => code)).toEqual(['ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'])
        } finally {
          seen.stop()
        }
      })

      it('dry run never changes what a client gets: a throwing key or a failing store lets it pass', async () => {
        const seen = watchWarnings()
        const events = listen<{ enforced: boolean; error?: unknown }>('sluice:rate-limit')
        try {
          const failing = memoryStore()
          failing.take = (() => Promise.reject(new Error('store down'))) as never
          const server = await serve({
            routes: [
              {
                method: 'get',
                path: '/key',
                use: [
                  {
                    rateLimit: {
                      limit: 1,
                      dryRun: true,
                      key: () => {
                        throw new Error('no key today')
                      },
                    },
                  },
                ],
                handler: { kind: 'json' },
              },
              {
                method: 'get',
                path: '/store',
                use: [{ rateLimit: { limit: 1, dryRun: true, store: failing } }],
                handler: { kind: 'json' },
              },
            ],
          })
          const answers = [
            await send(server, '/key'),
            await send(server, '/key'),
            await send(server, '/store'),
          ]
          expect(answers.map((res) => [res.status, JSON.parse(res.body).rateLimit])).toEqual([
            [200, null],
            [200, null],
            [200, null],
          ])
          expect(seen.given.map(([code]) => code)).toEqual([
            'ERR_SLUICE_DRY_RUN_FAILED',
            'ERR_SLUICE_DRY_RUN_FAILED',
          ])
          expect(events.events.map((e) => [e.enforced, (e.error as Error).message])).toEqual([
            [false, 'rateLimit: the "key" function failed: no key today'],
            [false, 'rateLimit: the "key" function failed: no key today'],
            [false, 'store down'],
          ])
        } finally {
          seen.stop()
          events.stop()
        }
      })

      it('options are read as own properties: a polluted prototype turns no limiter off', async () => {
        const { clock, store } = manual()
        // Not enumerable: a framework that walks objects with for...in (Hono's headers) would
        // trip over the pollution itself; a read through the prototype finds it all the same.
        Object.defineProperty(Object.prototype, 'dryRun', { value: true, configurable: true })
        try {
          const server = await serve(oneRoute({ limit: 1, window: '1m', clock, store }))
          expect(await statuses(server, '/', 2)).toEqual([200, 429])
        } finally {
          delete (Object.prototype as { dryRun?: unknown }).dryRun
        }
      })
    })

    describe('a failing onLimited, sync or async', () => {
      const failure = new Error('onLimited failed')
      const failing = {
        throws: () => {
          throw failure
        },
        rejects: () => Promise.reject(failure),
      }
      for (const [how, onLimited] of Object.entries(failing)) {
        it(`rate limit: an onLimited that ${how} is a 500 from the framework's error handling; no permit is lost`, async () => {
          const { clock, store } = manual()
          const errors: unknown[] = []
          const app = oneRoute({
            policies: [
              { limit: 1, window: '1m' },
              { limit: 10, window: '1h' },
            ],
            key: keys.global(),
            clock,
            store,
            onLimited,
          } as RateLimitOptions)
          const server = await serve({ ...app, onError: (error) => errors.push(error) })
          expect(await statuses(server, '/', 3)).toEqual([200, 500, 500])
          expect(errors).toEqual([failure, failure])
          // The refusals took nothing from the hourly budget: only the first request counts.
          const limiter = server.middleware?.(app.routes[0]!.use![0]!) as {
            get(key: string): Promise<unknown>
          }
          expect(await limiter.get('global')).toEqual([
            { policy: '1-per-1m', limit: 1, remaining: 0, resetMs: 66_000 },
            { policy: '10-per-1h', limit: 10, remaining: 9, resetMs: 3_960_000 },
          ])
        })

        it(`bulkhead: an onLimited that ${how} is a 500 from the framework's error handling; the slot stays with its holder`, async () => {
          const store = memoryStore()
          const work = gate()
          const errors: unknown[] = []
          const server = await serve({
            onError: (error) => errors.push(error),
            routes: [
              {
                method: 'get',
                path: '/work',
                use: [{ bulkhead: { max: 1, store, onLimited } as BulkheadOptions }],
                handler: { kind: 'hold', gate: work },
              },
            ],
          })
          const first = start(server, '/work')
          await until(() => work.arrived === 1, 'the first request holds the slot')
          expect(await statuses(server, '/work', 2)).toEqual([500, 500])
          expect(errors).toEqual([failure, failure])
          expect(store.inFlight).toBe(1)
          work.open()
          expect((await first.replied).status).toBe(200)
          await until(() => store.inFlight === 0, 'the slot is released')
          expect((await send(server, '/work')).status).toBe(200)
          await until(() => store.inFlight === 0, 'the next slot is released')
        })

        it(`a bulkhead ahead of a rate limit whose onLimited ${how}: the 500 frees the bulkhead's slot`, async () => {
          const { clock, store } = manual()
          const slots = memoryStore()
          const limited = {
            limit: 1,
            window: '1m',
            key: keys.global(),
            clock,
            store,
            onLimited,
          } as RateLimitOptions
          const server = await serve({
            onError: () => {},
            routes: [
              {
                method: 'get',
                path: '/',
                use: [{ bulkhead: { max: 1, store: slots } }, { rateLimit: limited }],
                handler: { kind: 'json' },
              },
            ],
          })
          expect((await send(server, '/')).status).toBe(200)
          for (let i = 0; i < 2; i++) {
            await until(() => slots.inFlight === 0, "the bulkhead's slot is released")
            // A slot still held would make this a 503 from the full bulkhead.
            expect((await send(server, '/')).status).toBe(500)
          }
          await until(() => slots.inFlight === 0, "the bulkhead's last slot is released")
        })
      }
    })

    describe('operating limits (issue 15)', () => {
      it('dryRun: nothing is refused; the decision and events say what would have been', async () => {
        const { clock, store } = manual()
        const seen = listen<{ allowed: boolean; enforced: boolean; key: string }>(
          'sluice:rate-limit',
        )
        try {
          const server = await serve(
            oneRoute({ limit: 1, window: '1m', dryRun: true, clock, store }),
          )
          const first = await send(server, '/')
          const second = await send(server, '/')
          expect([first.status, second.status]).toEqual([200, 200])
          expect(JSON.parse(second.body).rateLimit).toMatchObject({
            allowed: false,
            enforced: false,
          })
          expect(lines(second, ...RATE_LIMIT_HEADERS)).toEqual([])
          expect(seen.events.map((e) => [e.allowed, e.enforced])).toEqual([
            [true, false],
            [false, false],
          ])
        } finally {
          seen.stop()
        }
      })

      it('events: one per decided request, none for skipped ones; bulkhead events in order', async () => {
        const { clock, store } = manual()
        const rate = listen<{
          key: string
          policy: string
          allowed: boolean
          remaining: number
          cost: number
          retryAfterMs: number
        }>('sluice:rate-limit')
        const slots = listen<{ event: string; inFlight: number; queued: number; heldMs?: number }>(
          'sluice:bulkhead',
        )
        try {
          const server = await serve({
            routes: [
              {
                method: 'get',
                path: '/',
                use: [
                  {
                    rateLimit: {
                      limit: 1,
                      window: '1m',
                      key: keys.global(),
                      skip: (req) => harness.header(req, 'x-skip') === 'yes',
                      clock,
                      store,
                    },
                  },
                ],
                handler: { kind: 'json' },
              },
              {
                method: 'get',
                path: '/work',
                use: [{ bulkhead: { max: 1, store: memoryStore() } }],
                handler: { kind: 'json' },
              },
            ],
          })
          await send(server, '/', { headers: { 'x-skip': 'yes' } })
          expect(await statuses(server, '/', 2)).toEqual([200, 429])
          expect(rate.events).toEqual([
            expect.objectContaining({
              key: 'global',
              policy: '1-per-1m',
              allowed: true,
              remaining: 0,
              cost: 1,
              retryAfterMs: 0,
            }),
            expect.objectContaining({
              key: 'global',
              allowed: false,
              remaining: 0,
              retryAfterMs: 66_000,
            }),
          ])
          await send(server, '/work')
          await until(() => slots.events.length === 2, 'the slot is released')
          expect(slots.events.map((e) => [e.event, e.inFlight, e.queued])).toEqual([
            ['enter', 1, 0],
            ['release', 0, 0],
          ])
          expect(typeof slots.events[1]?.heldMs).toBe('number')
        } finally {
          rate.stop()
          slots.stop()
        }
      })

      it('limit as a function of the request: one plan, one budget each', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({
            limit: (req) => (harness.header(req, 'x-plan') === 'pro' ? 3 : 1),
            window: '1m',
            key: keys.header('x-user'),
            clock,
            store,
          }),
        )
        const free = { 'x-plan': 'free', 'x-user': 'ann' }
        const pro = { 'x-plan': 'pro', 'x-user': 'bob' }
        expect(await statuses(server, '/', 2, free)).toEqual([200, 429])
        expect(await statuses(server, '/', 4, pro)).toEqual([200, 200, 200, 429])
        expect(lines(await send(server, '/', { headers: pro }), 'RateLimit-Policy')).toEqual([
          'RateLimit-Policy: "3-per-1m";q=3;w=60',
        ])
      })

      it('policies as a function of the request (tenants)', async () => {
        const { clock, store } = manual()
        const plans = {
          small: [{ name: 'small', limit: 1, window: '1m' }],
          large: [
            { name: 'large-burst', algorithm: 'token-bucket', limit: 2, window: '1s' },
            { name: 'large-daily', algorithm: 'fixed-window', limit: 100, window: '1d' },
          ],
        } as const
        const server = await serve(
          oneRoute({
            policies: (req) =>
              harness.header(req, 'x-tenant') === 'large' ? plans.large : plans.small,
            key: keys.header('x-tenant'),
            clock,
            store,
          }),
        )
        expect(await statuses(server, '/', 2, { 'x-tenant': 'small' })).toEqual([200, 429])
        const large = await send(server, '/', { headers: { 'x-tenant': 'large' } })
        expect(lines(large, 'RateLimit')).toEqual([
          'RateLimit: "large-burst";r=1;t=1, "large-daily";r=99;t=86400',
        ])
      })

      it('block: a key refused `after` times is blocked for `for`, Retry-After the time left', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({
            algorithm: 'fixed-window',
            limit: 1,
            window: '1s',
            block: { for: '1h', after: 2 },
            key: keys.global(),
            clock,
            store,
          }),
        )
        expect(await statuses(server, '/', 2)).toEqual([200, 429])
        const blocks = await send(server, '/')
        expect([blocks.status, blocks.headers['retry-after']]).toEqual([429, '3600'])
        clock.advance(60_000)
        const during = await send(server, '/')
        expect([during.status, during.headers['retry-after']]).toEqual([429, '3540'])
        expect(during.headers.ratelimit).toBe('"1-per-1s-fixed-window-block-1h-after-2";r=0;t=3540')
        clock.advance(3_540_000)
        expect((await send(server, '/')).status).toBe(200)
      })

      it('get(key) reads a key without taking; resetKey unblocks it', async () => {
        const { clock, store } = manual()
        const spec: MiddlewareSpec = {
          rateLimit: { limit: 2, window: '1m', key: keys.global(), clock, store },
        }
        const server = await serve({
          use: [spec],
          routes: [{ method: 'get', path: '/', handler: { kind: 'json' } }],
        })
        const middleware = server.middleware?.(spec) as {
          get(key: string): unknown
          resetKey(key: string): unknown
        }
        await send(server, '/')
        expect(await middleware.get('global')).toEqual([
          { policy: '2-per-1m', limit: 2, remaining: 1, resetMs: 66_000 },
        ])
        expect(await middleware.get('global')).toEqual([
          { policy: '2-per-1m', limit: 2, remaining: 1, resetMs: 66_000 },
        ])
        await send(server, '/')
        expect((await send(server, '/')).status).toBe(429)
        await middleware.resetKey('global')
        expect((await send(server, '/')).status).toBe(200)
      })

      it('problemDetails: a refusal as RFC 9457 problem+json with the violated policies', async () => {
        const { clock, store } = manual()
        const server = await serve(
          oneRoute({
            policies: [
              { name: 'burst', algorithm: 'fixed-window', limit: 1, window: '1s' },
              { name: 'daily', algorithm: 'fixed-window', limit: 100, window: '1d' },
            ],
            problemDetails: true,
            message: 'Slow down, please.',
            clock,
            store,
          }),
        )
        await send(server, '/')
        const refused = await send(server, '/')
        expect(refused.status).toBe(429)
        expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/)
        expect(JSON.parse(refused.body)).toEqual({
          type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
          title: 'Request cannot be satisfied as assigned quota has been exceeded',
          status: 429,
          'violated-policies': ['burst'],
          detail: 'Slow down, please.',
        })
      })
    })

    describe('adaptive bulkhead (issue 16)', () => {
      it('bulkhead({ max: adaptiveConcurrency() }) admits up to the live limit and reports it', async () => {
        const clock = new ManualClock()
        const limiter = adaptiveConcurrency({
          algorithm: 'aimd',
          initial: 2,
          probeConcurrency: 1,
          probeSamples: 1,
          clock,
        })
        const changes = listen<{ limit: number; previous: number }>('sluice:adaptive')
        const work = gate()
        try {
          const server = await serve({
            routes: [
              {
                method: 'get',
                path: '/work',
                use: [{ bulkhead: { max: limiter } }],
                handler: { kind: 'hold', gate: work },
              },
            ],
          })
          // It starts by measuring the no-load latency at one request in flight.
          const first = start(server, '/work')
          await until(() => work.arrived === 1, 'the probe request runs')
          const refused = await send(server, '/work')
          expect([refused.status, refused.headers['ratelimit-policy']]).toEqual([
            503,
            '"adaptive-concurrent";q=1;qu="concurrent-requests"',
          ])
          clock.advance(10)
          work.open()
          expect((await first.replied).status).toBe(200)
          await until(() => limiter.limit === 2, 'the probe ended and the limit is back')
          expect(changes.events.map((e) => [e.previous, e.limit])).toEqual([[1, 2]])
          const more = gate()
          const held = await serve({
            routes: [
              {
                method: 'get',
                path: '/work',
                use: [{ bulkhead: { max: limiter, name: 'downstream' } }],
                handler: { kind: 'hold', gate: more },
              },
            ],
          })
          const a = start(held, '/work')
          const b = start(held, '/work')
          await until(() => more.arrived === 2, 'two requests hold the two slots')
          const full = await send(held, '/work')
          expect([full.status, full.headers.ratelimit]).toEqual([503, '"downstream";r=0'])
          more.open()
          expect([(await a.replied).status, (await b.replied).status]).toEqual([200, 200])
          await until(() => limiter.inFlight === 0, 'every permit is released')
        } finally {
          changes.stop()
        }
      })
    })
  })
}
