import type { LimitedBody, RequestAccessors, ResponseAccessors } from '@sluice/http'
import type { Context, MiddlewareHandler } from 'hono'
import { matchedRoutes } from 'hono/route'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { type GetIp, nodeClientGone, rawHeader } from './client-address'

/**
 * The pattern of the route that answers this request. Hono matches every route up front,
 * so even application-level middleware knows it: the last matched route registered for a
 * method (`app.use()` middleware is registered for 'ALL').
 */
function endpointRoute(c: Context): string | undefined {
  const routes = matchedRoutes(c)
  for (let i = routes.length - 1; i >= 0; i--) {
    if (routes[i]!.method !== 'ALL') return routes[i]!.path
  }
  return undefined
}

/** How `@sluice/http` reads a Hono context, with the client address from `getIp`. */
export function honoRequest(getIp: GetIp): RequestAccessors<Context> {
  return {
    ip: getIp,
    method: (c) => c.req.method,
    path: (c) => c.req.path,
    route: endpointRoute,
    header: rawHeader,
  }
}

/**
 * Header values sluice set on a context, by lower-case name. Before the handler has
 * answered, Hono keeps headers set with `c.header()` in private "prepared" headers with no
 * getter, and reading `c.res` that early would create a Response that @hono/node-server can
 * no longer send on its fast path (measured: about +45 µs per request).
 */
const written = new WeakMap<Context, Map<string, string>>()

/**
 * How `@sluice/http` writes to and watches a Hono response. Before the handler has
 * answered, a header's current value is the one sluice set (stacked limiters append to it).
 */
export const honoResponse: ResponseAccessors<Context, Context> = {
  getHeader: (c, name) =>
    c.finalized ? (c.res.headers.get(name) ?? undefined) : written.get(c)?.get(name.toLowerCase()),
  setHeader: (c, name, value) => {
    c.header(name, value)
    let headers = written.get(c)
    if (headers === undefined) {
      headers = new Map()
      written.set(c, headers)
    }
    headers.set(name.toLowerCase(), value)
  },
  // The runtime aborts the request's signal when its client goes away (@hono/node-server,
  // Bun and Deno do).
  signal: (c) => c.req.raw.signal,
}

/**
 * Puts the headers sluice set back on `c.res` where they are missing. Hono merges headers
 * set before `next()` into responses made with `c.json()`, `c.text()`, `c.body()`..., but
 * not into a `Response` a handler (or `onLimited`) constructs itself.
 */
export function restoreHeaders(c: Context): void {
  const headers = written.get(c)
  if (headers === undefined || !c.finalized) return
  for (const [name, value] of headers) if (!c.res.headers.has(name)) c.header(name, value)
}

/**
 * Makes `answer` (what `onLimited` returned, if anything) the response and gives it the
 * headers sluice set; returns what the middleware should return.
 */
export function answerWith(
  c: Context,
  answer: Awaited<MiddlewareResult> | undefined,
): Response | undefined {
  if (answer) c.res = answer
  restoreHeaders(c)
  return c.finalized ? c.res : undefined
}

/**
 * What a Hono middleware returns (`Promise<Response | void>`): a response, or nothing
 * once `next()` has produced one.
 */
export type MiddlewareResult = ReturnType<MiddlewareHandler>

/**
 * True once the client has gone away. Under `@hono/node-server` the socket says so without
 * creating the request's `AbortSignal`, which the runtime otherwise makes lazily.
 */
export function isGone(c: Context): boolean {
  return nodeClientGone(c) ?? c.req.raw.signal.aborted
}

/**
 * The answer to a request whose client left while it waited: nobody reads it, but a
 * middleware must return a response. 499 is nginx's "client closed request", so access
 * logs say what happened.
 */
export function clientGone(): Response {
  return new Response(null, { status: 499 })
}

/** A refusal: text as `text/plain`, an object as JSON, with the headers set on `c`. */
export function refuse(c: Context, status: number, body: LimitedBody): Response {
  const code = status as ContentfulStatusCode
  return typeof body === 'string' ? c.text(body, code) : c.json(body, code)
}
