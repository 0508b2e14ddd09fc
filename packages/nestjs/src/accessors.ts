import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestAccessors } from '@sluice/http/adapter'
import { headerOf, type NodeAccessors, requestSignal } from '@sluice/http/node'
import { RateLimitException } from './exception'
import type { NestRequest, NestResponse } from './nest-http'

const isFastify = (req: NestRequest) => req.raw !== undefined

/** Marks one GraphQL resolver call's view of its request (see {@link resolverCall}). */
const CALL = Symbol('sluice.resolverCall')

type Call = NestRequest & { [CALL]?: object }

/**
 * One resolver call's view of the HTTP request it runs in: the request itself to every
 * reader (its prototype), but a place of its own for the marks a limiter leaves on what
 * it decided. One GraphQL request runs many resolvers, and each guarded call counts:
 * 100 aliases of a limited `login` mutation in one request are 100 attempts, not one.
 */
export function resolverCall(req: NestRequest): NestRequest {
  const call = Object.create(req) as Call
  call[CALL] = call
  return call
}

/** The Node request behind either platform's request. */
export const incoming = (req: NestRequest) => (req.raw ?? req) as IncomingMessage

/** The Node response behind either platform's response. */
export const outgoing = (res: NestResponse) => (res.raw ?? res) as ServerResponse

/** Each Fastify instance's `trustProxy`, found once: finding it takes microseconds. */
const trustSettings = new WeakMap<object, unknown>()

/**
 * Fastify's `trustProxy` option, which it keeps only among the options of the instance
 * (under its `fastify.options` symbol): no public API reports it.
 */
function fastifyTrustProxy({ server }: NestRequest): unknown {
  if (server === undefined) return undefined
  if (!trustSettings.has(server)) trustSettings.set(server, fastifyOptionsOf(server)?.trustProxy)
  return trustSettings.get(server)
}

function fastifyOptionsOf(server: object): { trustProxy?: unknown } | undefined {
  for (let o: object | null = server; o !== null; o = Object.getPrototypeOf(o)) {
    const key = Object.getOwnPropertySymbols(o).find((s) => s.description === 'fastify.options')
    if (key !== undefined) return (o as Record<symbol, { trustProxy?: unknown }>)[key]
  }
}

const trustProxy = (req: NestRequest): unknown =>
  isFastify(req) ? fastifyTrustProxy(req) : req.app?.get('trust proxy')

/**
 * How `@sluice/http` reads a Nest request on either platform: `req.ip` honours the
 * platform's proxy setting (Express's `trust proxy`, Fastify's `trustProxy`); the route
 * pattern is known, since Nest routes before guards run.
 */
export const nestRequest: RequestAccessors<NestRequest> = {
  ip: (req) => req.ip,
  method: (req) => req.method ?? 'GET',
  path: (req) => (req.originalUrl ?? req.url ?? '/').split('?', 1)[0] ?? '/',
  route: (req) => {
    const url = req.routeOptions?.url
    if (url !== undefined) return url
    const path = req.route?.path
    return path === undefined ? undefined : String(path)
  },
  header: (req, name) => headerOf(req.headers, name),
  // Express swaps every request's prototype, which makes each property added to it slow
  // (see @sluice/express); res.locals is a dictionary made per request.
  slot: (req) => (req as Call)[CALL] ?? req.res?.locals ?? req,
  proxy: {
    texts: {
      permissive:
        "The platform trusts every proxy (Express's `trust proxy` or Fastify's `trustProxy` is true), so req.ip is the leftmost X-Forwarded-For address, which any client can set: every request can pick its own rate-limit key. Trust the number of proxies in front of the app, or their addresses.",
      untrusted:
        "An X-Forwarded-For header arrived while the platform trusts no proxy: if the app runs behind one, every client shares the proxy's address and one rate-limit key. Set Express's `trust proxy` (app.set('trust proxy', 1)) or Fastify's `trustProxy` (new FastifyAdapter({ trustProxy: 1 })).",
      noProxy: (watched) =>
        `The platform trusts a proxy, but none of the first ${watched} requests carried X-Forwarded-For: if no proxy is in front of the app, any client can send that header and choose its own rate-limit key. Stop trusting proxies, or check that the proxy sets the header.`,
    },
    view: (req) => {
      const setting = trustProxy(req)
      return {
        trusted: Boolean(setting),
        permissive: setting === true,
        forwarded: req.headers['x-forwarded-for'] !== undefined,
      }
    },
  },
}

/**
 * Where a GraphQL resolver's headers go when its context holds no response (Apollo on
 * Fastify, whose default context is `{ req }`): nowhere, the refusal still being an error.
 * A signal made for a waiting request aborts only when the connection closes.
 */
export function noResponse(): NestResponse {
  const headers = new Map<string, string>()
  const sink = {
    getHeader: (name: string) => headers.get(name.toLowerCase()),
    setHeader: (name: string, value: string) => headers.set(name.toLowerCase(), value),
    on: () => sink,
  }
  return sink
}

/** What the guard passes `respond` as `next`: going on means letting the request through. */
export type Admit = () => unknown

/**
 * How `@sluice/http/node` answers through a Nest guard. A guard cannot send a response on
 * every platform, so a refusal is thrown as a {@link RateLimitException} for Nest's
 * exception layer to send (and the app's filters to see), headers already on the
 * response; a failure is rethrown the same way.
 */
export const nestResponse: NodeAccessors<NestRequest, NestResponse, Admit> = {
  getHeader: (res, name) => res.getHeader(name),
  setHeader: (res, name, value) => {
    // Fastify keeps its reply's headers apart from the Node response until it sends; one
    // set on the Node response would lose to a Content-Type Fastify sets itself.
    if (res.raw !== undefined && res.header !== undefined) res.header(name, value)
    else outgoing(res).setHeader(name, value)
  },
  signal: (req, res) => requestSignal(incoming(req), outgoing(res)),
  status: (res) => outgoing(res).statusCode,
  incoming,
  outgoing,
  send: (_req, res, status, refusal) => {
    throw new RateLimitException(status, refusal, res)
  },
  expose: (req, name, value) => {
    ;(req as unknown as Record<string, unknown>)[name] = value
  },
  limited: () => {
    throw new TypeError('@sluice/nestjs: onLimited is not an option here; use an exception filter')
  },
  fail: (error) => {
    throw error
  },
}
