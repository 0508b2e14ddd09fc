import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { HOT_RATE } from './config'

/** The frameworks of the HTTP overhead section. */
export const FRAMEWORKS = ['express', 'koa', 'hono'] as const
export type Framework = (typeof FRAMEWORKS)[number]

/**
 * The same hello-world app bare; with a middleware that only sets two constant RateLimit
 * headers (what writing sluice's default headers costs in this framework, with no limiter:
 * the bound for any middleware that sends them); with sluice's middleware; with the peer's.
 */
export const VARIANTS = ['bare', 'headers', 'sluice', 'peer'] as const
export type Variant = (typeof VARIANTS)[number]

/** Each framework's peer middleware. */
export const PEER_MIDDLEWARE: Record<Framework, string> = {
  express: 'express-rate-limit',
  koa: 'koa-ratelimit',
  hono: 'hono-rate-limiter',
}

/** The sluice adapter of each framework. */
export const SLUICE_ADAPTER: Record<Framework, string> = {
  express: '@sluice/express',
  koa: '@sluice/koa',
  hono: '@sluice/hono',
}

const BODY = 'hello world'

/** sluice's default (draft-8) headers for one policy, as it sends them at this rate. */
const HEADERS = {
  RateLimit: '"default";r=999999999;t=3600',
  'RateLimit-Policy': '"default";q=1000000000;w=3600',
} as const

/** A listening server on 127.0.0.1. */
export interface RunningApp {
  readonly port: number
  close(): Promise<void>
}

function listen(server: Server): Promise<RunningApp> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    // Loopback only: the load never leaves this machine.
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          }),
      })
    })
  })
}

/** A limit: `limit` requests per `windowMs` per client. */
export interface AppRate {
  readonly limit: number
  readonly windowMs: number
}

async function expressApp(variant: Variant, { limit, windowMs }: AppRate): Promise<RunningApp> {
  const { default: express } = await import('express')
  const app = express()
  if (variant === 'headers') {
    app.use((_req, res, next) => {
      for (const [name, value] of Object.entries(HEADERS)) res.setHeader(name, value)
      next()
    })
  } else if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/express')
    app.use(rateLimit({ limit, window: windowMs }))
  } else if (variant === 'peer') {
    const { rateLimit } = await import('express-rate-limit')
    app.use(rateLimit({ limit, windowMs }))
  }
  app.get('/', (_req, res) => {
    res.send(BODY)
  })
  return listen(createServer(app))
}

async function koaApp(variant: Variant, { limit, windowMs }: AppRate): Promise<RunningApp> {
  const { default: Koa } = await import('koa')
  const app = new Koa()
  if (variant === 'headers') {
    app.use(async (ctx, next) => {
      ctx.set(HEADERS)
      await next()
    })
  } else if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/koa')
    app.use(rateLimit({ limit, window: windowMs }))
  } else if (variant === 'peer') {
    const { default: ratelimit } = await import('koa-ratelimit')
    app.use(ratelimit({ driver: 'memory', db: new Map(), duration: windowMs, max: limit }))
  }
  app.use((ctx) => {
    ctx.body = BODY
  })
  return listen(createServer(app.callback()))
}

async function honoApp(variant: Variant, { limit, windowMs }: AppRate): Promise<RunningApp> {
  const { Hono } = await import('hono')
  const { getRequestListener } = await import('@hono/node-server')
  const { getConnInfo } = await import('@hono/node-server/conninfo')
  const app = new Hono()
  if (variant === 'headers') {
    app.use(async (c, next) => {
      for (const [name, value] of Object.entries(HEADERS)) c.header(name, value)
      await next()
    })
  } else if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/hono')
    app.use(rateLimit({ limit, window: windowMs }))
  } else if (variant === 'peer') {
    const { rateLimiter } = await import('hono-rate-limiter')
    app.use(
      rateLimiter({
        limit,
        windowMs,
        // Required by hono-rate-limiter; the client address, as the other middlewares use.
        keyGenerator: (c) => getConnInfo(c).remote.address ?? '',
      }),
    )
  }
  app.get('/', (c) => c.text(BODY))
  return listen(createServer(getRequestListener(app.fetch)))
}

/**
 * Starts the hello-world app of `framework` in `variant` on an ephemeral loopback port.
 * Every middleware is configured the way the HTTP section measures it: limited per client
 * address (by default at a rate the load never reaches), every other option, headers
 * included, at its default.
 *
 * @example
 * ```ts
 * const app = await startApp('express', 'sluice')
 * await fetch(`http://127.0.0.1:${app.port}/`)
 * await app.close()
 * ```
 */
export function startApp(
  framework: Framework,
  variant: Variant,
  rate: AppRate = HOT_RATE,
): Promise<RunningApp> {
  switch (framework) {
    case 'express':
      return expressApp(variant, rate)
    case 'koa':
      return koaApp(variant, rate)
    case 'hono':
      return honoApp(variant, rate)
  }
}
