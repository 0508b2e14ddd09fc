import { Bulkhead, bulkhead, keys, memoryStore, RateLimit, rateLimit } from '@sluice/express'
import express, { type NextFunction, type Request, type Response } from 'express'

/** Stand-in for slow work (a report, a call to a partner API). */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A class-based controller: the decorators put a rate limit and a bulkhead in front of
 * single handler methods.
 */
class AccountController {
  readonly #accounts = new Map([['42', { id: '42', name: 'Ada' }]])

  /** 10 lookups per minute per client, on top of the global limit. */
  @RateLimit({ name: 'accounts', limit: 10, window: '1m' })
  show(req: Request, res: Response, _next: NextFunction) {
    const account = this.#accounts.get(String(req.params.id))
    if (account === undefined) res.status(404).json({ error: 'no such account' })
    else res.json({ account, remaining: req.rateLimit?.remaining })
  }

  /** At most 2 exports at once; 3 more may wait up to 2 s. */
  @Bulkhead({ name: 'exports', max: 2, maxQueue: 3, queueTimeout: '2s' })
  async export(_req: Request, res: Response, _next: NextFunction) {
    await pause(50)
    res.type('text/csv').send('id,name\n42,Ada\n')
  }
}

/** Options the smoke test turns down to make limits quick to reach. */
export interface AppOptions {
  /** Requests per minute per client over the whole API. Default 100. */
  globalLimit?: number
  /** Login attempts per 15 minutes per client. Default 5. */
  loginLimit?: number
  /** How long the slow report takes. Default 500 ms. */
  reportMs?: number
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
  const { globalLimit = 100, loginLimit = 5, reportMs = 500 } = options
  const app = express()
  // Behind one reverse proxy: req.ip is the client it saw. Without a proxy, remove this.
  app.set('trust proxy', 'loopback')

  app.use(rateLimit({ name: 'global', limit: globalLimit, window: '1m', store: memoryStore() }))

  app.post(
    '/login',
    rateLimit({
      name: 'login',
      algorithm: 'fixed-window',
      limit: loginLimit,
      window: '15m',
      // Count only failed attempts: a successful login gives its permit back.
      refundWhen: (_req, res) => res.statusCode < 400,
      message: { error: 'too many login attempts, try again later' },
    }),
    express.json(),
    (req, res) => {
      if (req.body?.password === 'correct horse') res.json({ ok: true })
      else res.status(401).json({ ok: false })
    },
  )

  app.get(
    '/report',
    bulkhead({ name: 'reports', max: 2, key: keys.global() }),
    async (_req, res) => {
      await pause(reportMs)
      res.json({ report: 'done' })
    },
  )

  const accounts = new AccountController()
  app.get('/accounts/:id', (req, res, next) => accounts.show(req, res, next))
  app.get('/export', (req, res, next) => accounts.export(req, res, next))

  app.get('/', (req, res) => {
    res.json({ hello: 'sluice', rateLimit: req.rateLimit })
  })
  return app
}
