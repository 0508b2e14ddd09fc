import { getConnInfo } from '@hono/node-server/conninfo'
import {
  Bulkhead,
  bulkhead,
  type GetIp,
  keys,
  memoryStore,
  RateLimit,
  type RateLimitEnv,
  rateLimit,
} from '@sluice/hono'
import { type Context, Hono } from 'hono'
import { stream } from 'hono/streaming'

/** Stand-in for slow work (a report, a call to a partner API). */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1'])

/**
 * Behind one reverse proxy on this host: a request from it names the client in the last
 * X-Forwarded-For entry; a request from anywhere else is the client itself. Without a
 * proxy, drop `getIp` and the socket address (the default) is used.
 */
const behindLocalProxy: GetIp = (c) => {
  const peer = getConnInfo(c).remote.address
  if (peer === undefined || !LOOPBACK.has(peer)) return peer
  return c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim() || peer
}

/**
 * A class-based controller: the decorators put a rate limit and a bulkhead in front of
 * single handler methods.
 */
class AccountController {
  readonly #accounts = new Map([['42', { id: '42', name: 'Ada' }]])

  /** 10 lookups per minute per client, on top of the global limit. */
  @RateLimit({ name: 'accounts', limit: 10, window: '1m', getIp: behindLocalProxy })
  async show(c: Context<RateLimitEnv, '/accounts/:id'>) {
    const account = this.#accounts.get(c.req.param('id'))
    if (account === undefined) return c.json({ error: 'no such account' }, 404)
    return c.json({ account, remaining: c.get('rateLimit')?.remaining })
  }

  /** At most 2 exports at once; 3 more may wait up to 2 s. The stream holds the slot. */
  @Bulkhead({ name: 'exports', max: 2, maxQueue: 3, queueTimeout: '2s' })
  async export(c: Context) {
    c.header('Content-Type', 'text/csv; charset=utf-8')
    return stream(c, async (body) => {
      await body.write('id,name\n')
      for (const { id, name } of this.#accounts.values()) await body.write(`${id},${name}\n`)
    })
  }
}

/** Options the smoke test turns down to make limits quick to reach. */
export interface AppOptions {
  /** Requests per minute per client over the whole API. Default 100. */
  globalLimit?: number
  /** Login attempts per 15 minutes per client. Default 5. */
  loginLimit?: number
  /** The slow report's work. Default: 500 ms of waiting. */
  report?: () => Promise<unknown>
}

/**
 * The example API: a global limit per client, a stricter limit on login, a bulkhead
 * around a slow report, and a decorated controller. Serve it with `@hono/node-server`
 * (see `server.ts`); on Bun, Deno or Workers, pass that runtime's `getIp`.
 *
 * @example
 * ```ts
 * serve({ fetch: createApp().fetch, port: 3000 })
 * ```
 */
export function createApp(options: AppOptions = {}) {
  const { globalLimit = 100, loginLimit = 5, report = () => pause(500) } = options
  const accounts = new AccountController()

  return new Hono()
    .use(
      rateLimit({
        name: 'global',
        limit: globalLimit,
        window: '1m',
        getIp: behindLocalProxy,
        store: memoryStore(),
      }),
    )
    .post(
      '/login',
      rateLimit({
        name: 'login',
        algorithm: 'fixed-window',
        limit: loginLimit,
        window: '15m',
        getIp: behindLocalProxy,
        // Count only failed attempts: a successful login gives its permit back.
        refundWhen: (c) => c.res.status < 400,
        message: { error: 'too many login attempts, try again later' },
      }),
      async (c) => {
        const body: { password?: unknown } = await c.req.json().catch(() => ({}))
        return body.password === 'correct horse' ? c.json({ ok: true }) : c.json({ ok: false }, 401)
      },
    )
    .get('/report', bulkhead({ name: 'reports', max: 2, key: keys.global() }), async (c) => {
      await report()
      return c.json({ report: 'done' })
    })
    .get('/accounts/:id', (c) => accounts.show(c))
    .get('/export', (c) => accounts.export(c))
    .get('/', (c) => c.json({ hello: 'sluice', rateLimit: c.get('rateLimit') }))
}
