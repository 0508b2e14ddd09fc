import type { ValidateOption as Checks, Decision } from '@sluice/http'
import type { ProxySetup, RequestAccessors } from '@sluice/http/adapter'
import type { FetchAccessors } from '@sluice/http/fetch'
import type { NodeAccessors } from '@sluice/http/node'
import type { Context, MiddlewareHandler, Next } from 'hono'
import { matchedRoutes } from 'hono/route'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { type GetIp, nodeBindings, onWorkers, rawHeader } from './client-address'

/** Stable codes of the one-time configuration warnings. */
export type ValidationCode = 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY' | 'ERR_SLUICE_NO_CLIENT_ADDRESS'

/**
 * Which one-time checks run on the first requests (all by default; none apply once a
 * `getIp` is given). `false` turns them all off; an object turns single ones off.
 *
 * @example
 * ```ts
 * rateLimit({ limit: 100, validate: { xForwardedFor: false } })
 * ```
 */
export type ValidateOption = Checks<'xForwardedFor' | 'clientAddress'>

/**
 * What a Hono middleware returns (`Promise<Response | void>`): a response, or nothing
 * once `next()` has produced one.
 */
export type MiddlewareResult = ReturnType<MiddlewareHandler>

/** What `onLimited` is called with in Hono. */
export type OnLimited = (
  c: Context,
  next: Next,
  decision: Decision,
) => Response | undefined | MiddlewareResult

/**
 * The pattern of the route that answers this request. Hono matches every route up front,
 * so even application-level middleware knows it: the last matched route registered for a
 * method (`app.use()` middleware is registered for 'ALL').
 */
function endpointRoute(c: Context): string | undefined {
  return matchedRoutes(c).findLast((route) => route.method !== 'ALL')?.path
}

const CHECKS = ['xForwardedFor', 'clientAddress'] as const

/**
 * The default `getIp` reads the peer of the connection, never a proxy header. On Workers
 * it is Cloudflare's own cf-connecting-ip, which already accounts for its proxy (the edge
 * adds X-Forwarded-For too): there the proxy counts as trusted, and the first request
 * ends the check.
 */
const SOCKET_ADDRESS: ProxySetup<Context> = {
  checks: CHECKS,
  texts: {
    untrusted:
      "An X-Forwarded-For header arrived, but the client address is read from the socket (the default getIp): if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Pass `getIp` reading the address your proxy sets (e.g. the last X-Forwarded-For entry).",
    noAddress:
      'No client address: the runtime reported none (the request was not served by @hono/node-server, Bun.serve, Deno.serve or Cloudflare Workers; app.request() in a test has no connection) and no `getIp` was given, so every client shares one rate-limit key. Pass `getIp` reading the address where your runtime or proxy puts it.',
  },
  view: (c) => ({
    trusted: onWorkers(),
    permissive: false,
    forwarded: rawHeader(c, 'x-forwarded-for') !== undefined,
  }),
}

/**
 * How `@sluice/http` reads a Hono context, with the client address from `getIp`. A given
 * `getIp` is the user's decision about proxies and runtimes: nothing is checked then.
 */
export function honoRequest(ip: GetIp, given: boolean): RequestAccessors<Context> {
  return {
    ip,
    method: (c) => c.req.method,
    path: (c) => c.req.path,
    route: endpointRoute,
    header: rawHeader,
    proxy: given ? { checks: CHECKS, texts: {} } : SOCKET_ADDRESS,
  }
}

/**
 * Header values sluice set on a context, by lower-case name, where there is no Node
 * response (Bun, Deno, Workers, `app.request()`). Before the handler has answered, Hono
 * keeps headers set with `c.header()` in private "prepared" headers with no getter, and
 * reading `c.res` that early would make a `Response` for nothing. A field on the context
 * (a symbol): cheaper than a `WeakMap` entry per request.
 */
const WRITTEN = Symbol('sluice.headers')

type Marked = Context & { [WRITTEN]?: Map<string, string> }

/**
 * Puts the headers sluice set back on `c.res` where they are missing. Hono merges headers
 * set before `next()` into responses made with `c.json()`, `c.text()`, `c.body()`..., but
 * not into a `Response` a handler (or `onLimited`) constructs itself. (Under
 * `@hono/node-server` they are on the Node response, which merges them into any answer.)
 */
function restoreHeaders(c: Context): void {
  const headers = (c as Marked)[WRITTEN]
  if (headers === undefined || !c.finalized) return
  for (const [name, value] of headers) if (!c.res.headers.has(name)) c.header(name, value)
}

type HonoAccessors = NodeAccessors<Context, Context, Next> & FetchAccessors<Context, Context, Next>

/**
 * How `@sluice/http` writes to, answers and watches a Hono response: with
 * `@sluice/http/node` under `@hono/node-server`, with `@sluice/http/fetch` elsewhere.
 *
 * Under `@hono/node-server` headers go straight onto the Node response, which merges them
 * into whatever the app answers (`c.text()`, `c.json()`, a `Response` of its own, an error
 * page): `c.header()` before the handler would put the response on the server's slow path
 * (an undici `Headers` per request, converted back for Node). Elsewhere they go through
 * `c.header()`, and the ones sluice set are remembered for reading back (stacked limiters
 * append to them) and for restoring onto a `Response` the handler made itself.
 */
export const honoResponse: HonoAccessors = {
  getHeader: (c, name) => {
    const node = nodeBindings(c)
    if (node !== undefined) return node.outgoing.getHeader(name)
    return c.finalized
      ? (c.res.headers.get(name) ?? undefined)
      : (c as Marked)[WRITTEN]?.get(name.toLowerCase())
  },
  setHeader: (c, name, value) => {
    const node = nodeBindings(c)
    if (node !== undefined && !node.outgoing.headersSent) {
      node.outgoing.setHeader(name, value)
      return
    }
    c.header(name, value)
    const marked = c as Marked
    const headers = marked[WRITTEN] ?? new Map<string, string>()
    marked[WRITTEN] = headers
    headers.set(name.toLowerCase(), value)
  },
  // The runtime aborts the request's signal when its client goes away (@hono/node-server,
  // Bun and Deno do; workerd once the response has started).
  signal: (c) => c.req.raw.signal,
  status: (c) => (c.finalized ? c.res.status : undefined),
  incoming: (c) => nodeBindings(c)!.incoming,
  outgoing: (c) => nodeBindings(c)!.outgoing,
  send: (c, _c, status, { contentType, body }) => {
    c.res = c.body(body, status as ContentfulStatusCode, { 'Content-Type': contentType })
  },
  expose: (c, name, value) => void c.set(name as never, value as never),
  limited: async (onLimited, c, _c, next, decision) => {
    const answer = await (onLimited as OnLimited)(c, next, decision)
    if (answer) c.res = answer
    restoreHeaders(c)
  },
  fail: (error) => {
    throw error
  },
  answered: (c) => {
    restoreHeaders(c)
    return c.finalized ? c.res : undefined
  },
  replace: (c, _c, response) => {
    c.res = response
  },
  // 499 is nginx's "client closed request": nobody reads it, but Hono needs an answer,
  // and access logs say what happened.
  abandoned: (c) => {
    c.res = new Response(null, { status: 499 })
  },
  // Only Workers have an execution context; Hono's getter throws elsewhere.
  waitUntil: (c, work) => onWorkers() && c.executionCtx.waitUntil(work),
}
