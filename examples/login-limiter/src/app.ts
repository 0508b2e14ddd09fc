import express, { type RequestHandler } from 'express'

/**
 * An Express app answering `POST /login` (a JSON body `{ email, password }`) with `route`.
 * The client address is `req.ip`, trusted from `X-Forwarded-For` when a proxy on the
 * loopback sent it, as behind a reverse proxy on the same host.
 *
 * @example
 * ```ts
 * loginApp(loginRoute()).listen(3000)
 * ```
 */
export function loginApp(route: RequestHandler): express.Express {
  const app = express()
  app.set('trust proxy', 'loopback')
  app.use(express.json())
  app.post('/login', route)
  return app
}
