import { Readable } from 'node:stream'
import Router, { type RouterContext } from '@koa/router'
import { Bulkhead, bulkhead, keys, memoryStore, RateLimit, rateLimit } from '@sluice/koa'
import Koa, { type Context } from 'koa'

/** Stand-in for slow work (a report, a call to a partner API). */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Reads a small JSON request body (a body parser such as @koa/bodyparser does this too). */
async function readJson(ctx: Context): Promise<Record<string, unknown>> {
  let text = ''
  for await (const chunk of ctx.req) {
    text += chunk
    if (text.length > 10_000) ctx.throw(413)
  }
  try {
    return JSON.parse(text) as Record<string, unknown>
  } catch {
    return ctx.throw(400, 'the body must be JSON')
  }
}

/**
 * A class-based controller: the decorators put a rate limit and a bulkhead in front of
 * single handler methods.
 */
class AccountController {
  readonly #accounts = new Map([['42', { id: '42', name: 'Ada' }]])

  /** 10 lookups per minute per client, on top of the global limit. */
  @RateLimit({ name: 'accounts', limit: 10, window: '1m' })
  async show(ctx: RouterContext) {
    const account = this.#accounts.get(String(ctx.params.id))
    if (account === undefined) {
      ctx.status = 404
      ctx.body = { error: 'no such account' }
    } else {
      ctx.body = { account, remaining: ctx.state.rateLimit?.remaining }
    }
  }

  /** At most 2 exports at once; 3 more may wait up to 2 s. The stream holds the slot. */
  @Bulkhead({ name: 'exports', max: 2, maxQueue: 3, queueTimeout: '2s' })
  async export(ctx: Context) {
    ctx.type = 'text/csv'
    ctx.body = Readable.from(['id,name\n', ...[...this.#accounts.values()].map(toCsv)])
  }
}

const toCsv = (account: { id: string; name: string }) => `${account.id},${account.name}\n`

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
 * around a slow report, and a decorated controller.
 *
 * @example
 * ```ts
 * createApp().listen(3000)
 * ```
 */
export function createApp(options: AppOptions = {}) {
  const { globalLimit = 100, loginLimit = 5, report = () => pause(500) } = options
  // Behind one reverse proxy: ctx.ip is the client it saw. Without a proxy, drop both.
  const app = new Koa({ proxy: true, maxIpsCount: 1 })
  const router = new Router()

  app.use(rateLimit({ name: 'global', limit: globalLimit, window: '1m', store: memoryStore() }))

  router.post(
    '/login',
    rateLimit({
      name: 'login',
      algorithm: 'fixed-window',
      limit: loginLimit,
      window: '15m',
      // Count only failed attempts: a successful login gives its permit back.
      refundWhen: (ctx) => ctx.status < 400,
      message: { error: 'too many login attempts, try again later' },
    }),
    async (ctx) => {
      const body = await readJson(ctx)
      ctx.status = body.password === 'correct horse' ? 200 : 401
      ctx.body = { ok: ctx.status === 200 }
    },
  )

  router.get('/report', bulkhead({ name: 'reports', max: 2, key: keys.global() }), async (ctx) => {
    await report()
    ctx.body = { report: 'done' }
  })

  const accounts = new AccountController()
  router.get('/accounts/:id', (ctx) => accounts.show(ctx))
  router.get('/export', (ctx) => accounts.export(ctx))

  router.get('/', (ctx) => {
    ctx.body = { hello: 'sluice', rateLimit: ctx.state.rateLimit }
  })
  app.use(router.routes()).use(router.allowedMethods())
  return app
}
