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
import express, { type Request, type RequestHandler, type Response } from 'express'
import { bulkhead } from './bulkhead'
import { rateLimit } from './rate-limit'

function middleware(spec: MiddlewareSpec): RequestHandler {
  return 'rateLimit' in spec
    ? rateLimit({ ...spec.rateLimit, validate: false })
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
        await spec.gate.enter()
        res.json(decision(req))
      }
    case 'throw':
      return () => {
        throw new Error('handler failed')
      }
    case 'stream':
      return async (_req, res) => {
        const body = new PassThrough()
        body.pipe(res)
        body.write('first\n')
        await spec.gate.enter()
        body.end('last\n')
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
