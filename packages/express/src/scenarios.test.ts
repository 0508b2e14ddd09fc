import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import {
  type AdapterHarness,
  type AppSpec,
  type HandlerSpec,
  type MiddlewareSpec,
  middlewareMemo,
  runAdapterScenarios,
} from '@sluice/http/testing'
import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express'
import { bulkhead } from './bulkhead'
import { rateLimit } from './rate-limit'

function middleware(spec: MiddlewareSpec): RequestHandler {
  if ('uncalled' in spec) return (spec.uncalled === 'rateLimit' ? rateLimit : bulkhead) as never
  return 'rateLimit' in spec
    ? rateLimit({ validate: false, ...spec.rateLimit })
    : bulkhead(spec.bulkhead)
}

function handler(spec: HandlerSpec): RequestHandler {
  const decision = (req: Request) => ({ rateLimit: req.rateLimit ?? null })
  switch (spec.kind) {
    case 'json':
      return (req, res) => void res.json(decision(req))
    case 'status':
      return (req, res) => void res.status(spec.status).json(decision(req))
    case 'hold':
      return async (req, res) => {
        await spec.gate.enter(req.bulkhead?.signal)
        res.json(decision(req))
      }
    case 'throw':
      return () => {
        throw new Error('handler failed')
      }
    case 'stream':
      return async (req, res) => {
        const body = new PassThrough()
        body.pipe(res)
        body.write('first\n')
        await spec.gate.enter(req.bulkhead?.signal)
        body.end('last\n')
      }
    case 'destroy':
      return (_req, res, next) => {
        res.destroy()
        next(new Error('destroyed'))
      }
  }
}

export const expressHarness: AdapterHarness = {
  name: 'express',
  async start(spec: AppSpec) {
    const built = middlewareMemo(middleware)
    const app = express()
    app.set('trust proxy', spec.trustProxy === true ? 'loopback' : false)
    for (const use of spec.use ?? []) app.use(built.get(use))
    for (const route of spec.routes) {
      app[route.method](
        route.path,
        ...(route.use ?? []).map((use) => built.get(use)),
        handler(route.handler),
      )
    }
    const { onError } = spec
    if (onError !== undefined) {
      app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
        onError(error)
        res.status(500).end()
      })
    }
    const server = createServer(app)
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
  header: (req: Request, name) => req.get(name),
  status: (_req: Request, res: Response) => res.statusCode,
}

runAdapterScenarios(expressHarness)
