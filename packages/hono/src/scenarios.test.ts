import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { getConnInfo } from '@hono/node-server/conninfo'
import {
  type AdapterHarness,
  type AppSpec,
  type HandlerSpec,
  type MiddlewareSpec,
  middlewareMemo,
  runAdapterScenarios,
} from '@sluice/http/testing'
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { stream } from 'hono/streaming'
import { bulkhead } from './bulkhead'
import type { GetIp } from './client-address'
import { rateLimit } from './rate-limit'

/** One trusted proxy (the test client): the address it appended to X-Forwarded-For. */
const behindOneProxy: GetIp = (c) =>
  c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim() ?? getConnInfo(c).remote.address

function middleware(spec: MiddlewareSpec, trustProxy: boolean): MiddlewareHandler {
  // Without trustProxy the default getIp (@hono/node-server's getConnInfo) is under test.
  const address = trustProxy ? { getIp: behindOneProxy } : {}
  return 'rateLimit' in spec
    ? rateLimit({ ...spec.rateLimit, ...address, validate: false })
    : bulkhead({ ...spec.bulkhead, ...address })
}

function handler(spec: HandlerSpec): MiddlewareHandler {
  const decision = (c: Context) => ({ rateLimit: c.get('rateLimit') ?? null })
  switch (spec.kind) {
    case 'json':
      return async (c) => c.json(decision(c))
    case 'status':
      return async (c) => c.json(decision(c), spec.status as 200)
    case 'hold':
      return async (c) => {
        await spec.gate.enter()
        return c.json(decision(c))
      }
    case 'throw':
      return async () => {
        throw new Error('handler failed')
      }
    case 'stream':
      return async (c) =>
        stream(c, async (body) => {
          await body.write('first\n')
          await spec.gate.enter()
          await body.write('last\n')
        })
  }
}

export const honoHarness: AdapterHarness = {
  name: 'hono',
  async start(spec: AppSpec) {
    const trustProxy = spec.trustProxy === true
    const app = new Hono()
    // Hono's default onError also prints the error; the 'throw' scenario fails on purpose.
    app.onError((_error, c) => c.text('Internal Server Error', 500))
    const built = middlewareMemo((use) => middleware(use, trustProxy))
    for (const use of spec.use ?? []) app.use(built.get(use))
    for (const route of spec.routes) {
      const [first, ...rest] = [
        ...(route.use ?? []).map((use) => built.get(use)),
        handler(route.handler),
      ]
      app.on(route.method.toUpperCase(), route.path, first!, ...rest)
    }
    const { server, port } = await new Promise<{
      server: ReturnType<typeof serve>
      port: number
    }>((resolve) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
        resolve({ server, port: (info as AddressInfo).port }),
      )
    })
    return {
      port,
      middleware: (use: MiddlewareSpec) => built.get(use),
      close: () =>
        new Promise<void>((resolve) => {
          if ('closeAllConnections' in server) server.closeAllConnections()
          server.close(() => resolve())
        }),
    }
  },
  header: (c: Context, name) => c.req.header(name),
  status: (_req, c: Context) => c.res.status,
  headerLines: 'fetch',
}

runAdapterScenarios(honoHarness)
