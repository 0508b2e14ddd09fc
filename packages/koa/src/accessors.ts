import type { Decision } from '@sluice/http'
import type { RequestAccessors } from '@sluice/http/adapter'
import { headerOf, type NodeAccessors, requestSignal } from '@sluice/http/node'
import type { Context, Next } from 'koa'

/** What `onLimited` is called with in Koa. */
export type OnLimited = (ctx: Context, next: Next, decision: Decision) => unknown

/** The shape of an `@koa/router` layer, read without depending on the router. */
interface RouterLayer {
  readonly path: string | RegExp
  readonly methods: readonly string[]
}

/**
 * The pattern of the route `@koa/router` is serving: the last matched layer that takes
 * this method (router-level `use()` layers take none). Undefined before a router matched.
 */
function matchedRoute(ctx: Context): string | undefined {
  const matched = (ctx as { matched?: readonly RouterLayer[] }).matched
  const layer = matched?.findLast((l) => l.methods.includes(ctx.method))
  return layer === undefined ? undefined : String(layer.path)
}

/**
 * How `@sluice/http` reads a Koa context: `ctx.ip` is proxy-aware (it honours
 * `app.proxy`, `app.proxyIpHeader` and `app.maxIpsCount`); the route pattern is known
 * once `@koa/router` has matched.
 */
export const koaRequest: RequestAccessors<Context> = {
  ip: (ctx) => ctx.ip || undefined,
  method: (ctx) => ctx.method,
  path: (ctx) => ctx.path,
  route: matchedRoute,
  header: (ctx, name) => headerOf(ctx.req.headers, name),
  proxy: {
    texts: {
      permissive:
        "Koa's `app.proxy` is on with `app.maxIpsCount` 0, so ctx.ip is the leftmost proxy-header address, which any client can set: every request can pick its own rate-limit key. Set `app.maxIpsCount` to the number of proxies in front of the app.",
      untrusted:
        "A proxy header (app.proxyIpHeader) arrived while Koa's `app.proxy` is off: if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Set `app.proxy = true` and `app.maxIpsCount` to the number of proxies; the header is ignored until then.",
      noProxy: (watched) =>
        `Koa's \`app.proxy\` is on, but none of the first ${watched} requests carried the proxy header (app.proxyIpHeader): if no proxy is in front of the app, any client can send that header and choose its own rate-limit key. Turn \`app.proxy\` off, or check that the proxy sets the header.`,
    },
    view: ({ app, req }) => ({
      trusted: app.proxy,
      permissive: app.proxy && !(app.maxIpsCount > 0),
      forwarded: req.headers[app.proxyIpHeader.toLowerCase()] !== undefined,
    }),
  },
}

/**
 * How `@sluice/http/node` writes to, answers and watches a Koa response. Headers go to the
 * Node response as `ctx.set()` would put them (it calls `res.setHeader` for a string),
 * without Koa's delegation and argument juggling on the way; a refusal is Koa's
 * `ctx.body`, sent once the middleware returns.
 */
export const koaResponse: NodeAccessors<Context, Context, Next> = {
  getHeader: (ctx, name) => ctx.res.getHeader(name),
  setHeader: (ctx, name, value) => {
    if (!ctx.res.headersSent) ctx.res.setHeader(name, value)
  },
  signal: (ctx) => requestSignal(ctx.req, ctx.res),
  status: (ctx) => ctx.status,
  incoming: (ctx) => ctx.req,
  outgoing: (ctx) => ctx.res,
  send: (ctx, _ctx, status, { contentType, body }) => {
    ctx.status = status
    ctx.type = contentType
    ctx.body = body
  },
  expose: (ctx, name, value) => {
    ctx.state[name] = value as never
  },
  limited: (onLimited, ctx, _ctx, next, decision) => (onLimited as OnLimited)(ctx, next, decision),
  fail: (error) => {
    throw error
  },
}
