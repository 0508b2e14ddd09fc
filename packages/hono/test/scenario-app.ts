import type { AppSpec, HandlerSpec, MiddlewareSpec } from '@sluice/http/testing'
import { middlewareMemo } from '@sluice/http/testing'
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { stream } from 'hono/streaming'
import { bulkhead } from '../src/bulkhead'
import type { GetIp } from '../src/client-address'
import { rateLimit } from '../src/rate-limit'

/**
 * A Hono app built from a scenario's `AppSpec`, the same on every runtime: only how it is
 * served differs (`@hono/node-server`, `Bun.serve`, `Deno.serve`, workerd).
 */
export interface ScenarioApp {
  readonly app: Hono
  /** The middleware built from a spec (see `RunningServer.middleware`). */
  middleware(spec: MiddlewareSpec): unknown
}

/**
 * One trusted proxy (the test client): the address it appended to X-Forwarded-For, else
 * the peer as `peer` reads it.
 */
export const behindOneProxy =
  (peer: GetIp): GetIp =>
  (c) =>
    c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim() ?? peer(c)

function middleware(spec: MiddlewareSpec, getIp: GetIp | undefined): MiddlewareHandler {
  // Without trustProxy the default getIp (the runtime's own peer address) is under test.
  const address = getIp === undefined ? {} : { getIp }
  if ('uncalled' in spec) return (spec.uncalled === 'rateLimit' ? rateLimit : bulkhead) as never
  return 'rateLimit' in spec
    ? rateLimit({ validate: false, ...spec.rateLimit, ...address })
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
        await spec.gate.enter(c.get('bulkhead')?.signal)
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
          await spec.gate.enter(c.get('bulkhead')?.signal)
          await body.write('last\n')
        })
    case 'destroy':
      // Where there is no response to destroy, a body that fails is one that never finishes.
      return async () =>
        new Response(
          new ReadableStream({
            pull: (controller) => controller.error(new Error('destroyed')),
          }),
        )
  }
}

/**
 * Builds the app of `spec`. `peer` reads the connection's address on this runtime; it is
 * used behind the trusted proxy of `spec.trustProxy` (without it the default is tested).
 */
export function scenarioApp(spec: AppSpec, peer: GetIp): ScenarioApp {
  const getIp = spec.trustProxy === true ? behindOneProxy(peer) : undefined
  const app = new Hono()
  // Hono's default onError also prints the error; the 'throw' scenario fails on purpose.
  app.onError((error, c) => {
    spec.onError?.(error)
    return c.text('Internal Server Error', 500)
  })
  const built = middlewareMemo((use) => middleware(use, getIp))
  for (const use of spec.use ?? []) app.use(built.get(use))
  for (const route of spec.routes) {
    const [first, ...rest] = [
      ...(route.use ?? []).map((use) => built.get(use)),
      handler(route.handler),
    ]
    app.on(route.method.toUpperCase(), route.path, first!, ...rest)
  }
  return { app, middleware: (use) => built.get(use) }
}

/** How a harness reads what `skip`/`cost`/`refundWhen` callbacks receive: Hono's `c`. */
export const honoCallbacks = {
  header: (c: Context, name: string) => c.req.header(name),
  status: (_req: unknown, c: Context) => c.res.status,
  headerLines: 'fetch',
} as const
