import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import Router from '@koa/router'
import {
  type AdapterHarness,
  type AppSpec,
  type HandlerSpec,
  type MiddlewareSpec,
  middlewareMemo,
  runAdapterScenarios,
} from '@sluice/http/testing'
import Koa, { type Context, type Middleware } from 'koa'
import { bulkhead } from './bulkhead'
import { rateLimit } from './rate-limit'

function middleware(spec: MiddlewareSpec): Middleware {
  if ('uncalled' in spec) return (spec.uncalled === 'rateLimit' ? rateLimit : bulkhead) as never
  return 'rateLimit' in spec
    ? rateLimit({ validate: false, ...spec.rateLimit })
    : bulkhead(spec.bulkhead)
}

function handler(spec: HandlerSpec): Middleware {
  const decision = (ctx: Context) => ({ rateLimit: ctx.state.rateLimit ?? null })
  switch (spec.kind) {
    case 'json':
      return (ctx) => {
        ctx.body = decision(ctx)
      }
    case 'status':
      return (ctx) => {
        ctx.status = spec.status
        ctx.body = decision(ctx)
      }
    case 'hold':
      return async (ctx) => {
        await spec.gate.enter(ctx.state.bulkhead?.signal)
        ctx.body = decision(ctx)
      }
    case 'throw':
      return () => {
        throw new Error('handler failed')
      }
    case 'stream':
      // Koa pipes ctx.body after the middleware chain returns: the handler must not wait.
      return (ctx) => {
        const body = new PassThrough()
        ctx.type = 'text/plain'
        ctx.body = body
        body.write('first\n')
        void spec.gate.enter(ctx.state.bulkhead?.signal).then(() => body.end('last\n'))
      }
    case 'destroy':
      return (ctx) => {
        ctx.res.destroy()
        throw new Error('destroyed')
      }
  }
}

export const koaHarness: AdapterHarness = {
  name: 'koa',
  async start(spec: AppSpec) {
    const app = new Koa()
    // One trusted proxy (the test client): ctx.ip is the address it forwarded.
    app.proxy = spec.trustProxy === true
    app.maxIpsCount = 1
    // The 'throw' scenario fails on purpose; Koa would print every such error.
    app.silent = true
    const { onError } = spec
    if (onError !== undefined) app.on('error', (error: unknown) => onError(error))
    const built = middlewareMemo(middleware)
    const router = new Router()
    for (const use of spec.use ?? []) app.use(built.get(use))
    for (const route of spec.routes) {
      router[route.method](
        route.path,
        ...(route.use ?? []).map((use) => built.get(use)),
        handler(route.handler),
      )
    }
    app.use(router.routes())
    const server = createServer(app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return {
      port: (server.address() as AddressInfo).port,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        }),
      middleware: (use: MiddlewareSpec) => built.get(use),
    }
  },
  header: (ctx: Context, name) => ctx.get(name) || undefined,
  status: (_req, ctx: Context) => ctx.status,
}

runAdapterScenarios(koaHarness)
