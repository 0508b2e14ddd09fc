import {
  isPromiseLike,
  type Outcome,
  type RequestAccessors,
  type ResponseAccessors,
} from '@sluice/http/adapter'
import { isClientGone, whenResponseOver } from '@sluice/http/node'
import type { Context, MiddlewareHandler, Next } from 'hono'
import { matchedRoutes } from 'hono/route'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { type GetIp, nodeBindings, rawHeader } from './client-address'
import { holdUntilSent } from './hold-body'

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
 * Header values sluice set on a context, by lower-case name, where there is no Node
 * response (Bun, Deno, Workers, `app.request()`). Before the handler has answered, Hono
 * keeps headers set with `c.header()` in private "prepared" headers with no getter, and
 * reading `c.res` that early would make a `Response` for nothing. A field on the context
 * (a symbol): cheaper than a `WeakMap` entry per request.
 */
const WRITTEN = Symbol('sluice.headers')

type Marked = Context & { [WRITTEN]?: Map<string, string> }

/**
 * How `@sluice/http` writes to and watches a Hono response.
 *
 * Under `@hono/node-server` headers go straight onto the Node response, which merges them
 * into whatever the app answers (`c.text()`, `c.json()`, a `Response` of its own, an error
 * page): `c.header()` before the handler would put the response on the server's slow path
 * (an undici `Headers` per request, converted back for Node). Elsewhere they go through
 * `c.header()`, and the ones sluice set are remembered for reading back (stacked limiters
 * append to them) and for restoring onto a `Response` the handler made itself.
 */
export const honoResponse: ResponseAccessors<Context, Context> = {
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
    let headers = marked[WRITTEN]
    if (headers === undefined) {
      headers = new Map()
      marked[WRITTEN] = headers
    }
    headers.set(name.toLowerCase(), value)
  },
  // The runtime aborts the request's signal when its client goes away (@hono/node-server,
  // Bun and Deno do).
  signal: (c) => c.req.raw.signal,
  status: (c) => (c.finalized ? c.res.status : undefined),
}

/**
 * Puts the headers sluice set back on `c.res` where they are missing. Hono merges headers
 * set before `next()` into responses made with `c.json()`, `c.text()`, `c.body()`..., but
 * not into a `Response` a handler (or `onLimited`) constructs itself. (Under
 * `@hono/node-server` they are on the Node response, which merges them into any answer.)
 */
export function restoreHeaders(c: Context): void {
  const headers = (c as Marked)[WRITTEN]
  if (headers === undefined || !c.finalized) return
  for (const [name, value] of headers) if (!c.res.headers.has(name)) c.header(name, value)
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
  const node = nodeBindings(c)
  return node === undefined ? c.req.raw.signal.aborted : isClientGone(node.incoming, node.outgoing)
}

/**
 * The answer to a request whose client left while it waited: nobody reads it, but a
 * middleware must return a response. 499 is nginx's "client closed request", so access
 * logs say what happened.
 */
export function clientGone(): Response {
  return new Response(null, { status: 499 })
}

/**
 * Carries out an outcome in Hono: the next handler for a pass, `onLimited` or the
 * prepared refusal. When the outcome holds something, its end follows the response:
 * under `@hono/node-server` the Node response (finish, close, or the socket closing);
 * elsewhere, with `untilSent` (a bulkhead slot), the body stream (read to its end or
 * cancelled) or the client leaving, and without it (a refund, which needs only the
 * status) the handler's answer. A handler that failed ends it at once.
 */
export async function answer<D>(
  c: Context,
  next: Next,
  outcome: Outcome,
  onLimited:
    | ((c: Context, next: Next, decision: D) => Response | undefined | MiddlewareResult)
    | undefined,
  untilSent: boolean,
): Promise<Response | undefined> {
  if (outcome.action === 'refuse') {
    if (onLimited !== undefined) {
      const answer = await onLimited(c, next, outcome.decision as D)
      if (answer) c.res = answer
      restoreHeaders(c)
      return c.finalized ? c.res : undefined
    }
    const refusal = outcome.refusal()
    const { contentType, body } = isPromiseLike(refusal) ? await refusal : refusal
    return c.body(body, outcome.status as ContentfulStatusCode, { 'Content-Type': contentType })
  }
  if (!outcome.holds) {
    await next()
    restoreHeaders(c)
    return undefined
  }
  const node = nodeBindings(c)
  // Only read off Node: @hono/node-server makes the request's signal (and the Request
  // behind it) on first access, a few microseconds per request for nothing.
  const signal = node === undefined ? c.req.raw.signal : undefined
  if (node !== undefined) {
    whenResponseOver(node.incoming, node.outgoing, outcome)
    if (isClientGone(node.incoming, node.outgoing)) return clientGone()
  } else if (signal!.aborted) {
    outcome.done(true)
    return clientGone()
  } else if (untilSent) {
    // Bun, Deno and @hono/node-server abort the request's signal when its client leaves.
    signal!.addEventListener('abort', () => outcome.done(true), { once: true })
  }
  try {
    await next()
  } catch (error) {
    outcome.done(false)
    throw error
  }
  // Hono answered a thrown error with its onError response: the work has stopped.
  if (c.error !== undefined) {
    outcome.done(false)
    return undefined
  }
  restoreHeaders(c)
  if (node !== undefined) return undefined
  // `await next()` returns once the handler has a Response, before a streamed body is
  // sent: a slot goes with the body until it has been read to the end or cancelled.
  if (untilSent) c.res = holdUntilSent(c.res, outcome)
  else outcome.done(signal!.aborted)
  return undefined
}
