import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { compilePolicy } from '@sluice/keyed/store'
import { HOT_RATE } from './config'

/** The frameworks of the HTTP overhead section. */
export const FRAMEWORKS = ['express', 'koa', 'hono', 'fastify'] as const
export type Framework = (typeof FRAMEWORKS)[number]

/**
 * The same hello-world app bare; with a middleware that only sets the two RateLimit
 * headers sluice sends, as constants (what writing them costs in this framework, with no
 * limiter: the bound for any middleware that sends them); with sluice's rate limit; with
 * the peer's; with sluice's bulkhead alone, at its defaults (which send the two headers)
 * and with `headers: false` (the bulkhead's own cost).
 */
export const VARIANTS = ['bare', 'headers', 'sluice', 'peer', 'bulkhead', 'bulkhead-quiet'] as const
export type Variant = (typeof VARIANTS)[number]

/** Each framework's peer middleware. */
export const PEER_MIDDLEWARE: Record<Framework, string> = {
  express: 'express-rate-limit',
  koa: 'koa-ratelimit',
  hono: 'hono-rate-limiter',
  fastify: '@fastify/rate-limit',
}

/** The sluice adapter of each framework. */
export const SLUICE_ADAPTER: Record<Framework, string> = {
  express: '@sluice/express',
  koa: '@sluice/koa',
  hono: '@sluice/hono',
  fastify: '@sluice/fastify',
}

const BODY = 'hello world'

/**
 * sluice's default (draft-8) headers for its default policy at the hot rate, as it sends
 * them after the first request (a sliding window's `t` is at most its window).
 */
function headersOf({ limit, windowMs }: AppRate): Record<string, string> {
  const name = compilePolicy({ limit, window: windowMs }, 'bench').name
  return {
    'RateLimit-Policy': `"${name}";q=${limit};w=${Math.ceil(windowMs / 1000)}`,
    RateLimit: `"${name}";r=${limit - 1};t=${Math.ceil((windowMs * 1.1) / 1000)}`,
  }
}

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

async function expressApp(variant: Variant, rate: AppRate): Promise<RunningApp> {
  const { limit, windowMs } = rate
  const { default: express } = await import('express')
  const app = express()
  if (variant === 'headers') {
    const headers = Object.entries(headersOf(rate))
    app.use((_req, res, next) => {
      for (const [name, value] of headers) res.setHeader(name, value)
      next()
    })
  } else if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/express')
    app.use(rateLimit({ limit, window: windowMs }))
  } else if (variant === 'peer') {
    const { rateLimit } = await import('express-rate-limit')
    app.use(rateLimit({ limit, windowMs }))
  } else if (variant === 'bulkhead' || variant === 'bulkhead-quiet') {
    const { bulkhead } = await import('@sluice/express')
    app.use(bulkhead(variant === 'bulkhead' ? {} : { headers: false }))
  }
  app.get('/', (_req, res) => {
    res.send(BODY)
  })
  return listen(createServer(app))
}

async function koaApp(variant: Variant, rate: AppRate): Promise<RunningApp> {
  const { limit, windowMs } = rate
  const { default: Koa } = await import('koa')
  const app = new Koa()
  if (variant === 'headers') {
    const headers = headersOf(rate)
    app.use(async (ctx, next) => {
      ctx.set(headers)
      await next()
    })
  } else if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/koa')
    app.use(rateLimit({ limit, window: windowMs }))
  } else if (variant === 'peer') {
    const { default: ratelimit } = await import('koa-ratelimit')
    app.use(ratelimit({ driver: 'memory', db: new Map(), duration: windowMs, max: limit }))
  } else if (variant === 'bulkhead' || variant === 'bulkhead-quiet') {
    const { bulkhead } = await import('@sluice/koa')
    app.use(bulkhead(variant === 'bulkhead' ? {} : { headers: false }))
  }
  app.use((ctx) => {
    ctx.body = BODY
  })
  return listen(createServer(app.callback()))
}

async function honoApp(variant: Variant, rate: AppRate): Promise<RunningApp> {
  const { limit, windowMs } = rate
  const { Hono } = await import('hono')
  const { getRequestListener } = await import('@hono/node-server')
  const { getConnInfo } = await import('@hono/node-server/conninfo')
  const app = new Hono()
  if (variant === 'headers') {
    const headers = Object.entries(headersOf(rate))
    app.use(async (c, next) => {
      for (const [name, value] of headers) c.header(name, value)
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
  } else if (variant === 'bulkhead' || variant === 'bulkhead-quiet') {
    const { bulkhead } = await import('@sluice/hono')
    app.use(bulkhead(variant === 'bulkhead' ? {} : { headers: false }))
  }
  app.get('/', (c) => c.text(BODY))
  return listen(createServer(getRequestListener(app.fetch)))
}

async function fastifyApp(variant: Variant, rate: AppRate): Promise<RunningApp> {
  const { limit, windowMs } = rate
  const { default: Fastify } = await import('fastify')
  const app = Fastify()
  if (variant === 'headers') {
    const headers = Object.entries(headersOf(rate))
    app.addHook('onRequest', (_request, reply, done) => {
      for (const [name, value] of headers) reply.header(name, value)
      done()
    })
  } else if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/fastify')
    app.addHook('onRequest', rateLimit({ limit, window: windowMs }))
  } else if (variant === 'peer') {
    const { default: fastifyRateLimit } = await import('@fastify/rate-limit')
    await app.register(fastifyRateLimit, { max: limit, timeWindow: windowMs })
  } else if (variant === 'bulkhead' || variant === 'bulkhead-quiet') {
    const { bulkhead } = await import('@sluice/fastify')
    app.addHook('onRequest', bulkhead(variant === 'bulkhead' ? {} : { headers: false }))
  }
  app.get('/', (_request, reply) => {
    reply.type('text/plain; charset=utf-8').send(BODY)
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    port: (app.server.address() as AddressInfo).port,
    close: async () => {
      app.server.closeAllConnections()
      await app.close()
    },
  }
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
    case 'fastify':
      return fastifyApp(variant, rate)
  }
}
