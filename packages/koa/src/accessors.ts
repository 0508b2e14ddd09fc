import type { LimitedBody, RequestAccessors, ResponseAccessors } from '@sluice/http'
import type { Context } from 'koa'

/** Why a waiting request's signal aborts: its client went away. */
export function clientGone(): Error {
  const error = new Error('sluice: the client disconnected while the request was waiting')
  error.name = 'AbortError'
  return error
}

/** True once the client can no longer receive this response. */
export function isGone(ctx: Context): boolean {
  return ctx.req.socket?.destroyed === true && !ctx.res.writableFinished
}

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
  header: (ctx, name) => {
    const value = ctx.req.headers[name]
    return Array.isArray(value) ? value.join(', ') : value
  },
}

/** How `@sluice/http` writes to and watches a Koa response. */
export const koaResponse: ResponseAccessors<Context, Context> = {
  getHeader: (ctx, name) => ctx.res.getHeader(name),
  setHeader: (ctx, name, value) => {
    ctx.set(name, value)
  },
  signal: (ctx) => {
    const controller = new AbortController()
    if (isGone(ctx)) {
      controller.abort(clientGone())
      return controller.signal
    }
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) controller.abort(clientGone())
    })
    return controller.signal
  },
}

/** Answers a refusal: Koa sends a string as `text/plain` and an object as JSON. */
export function refuse(ctx: Context, status: number, body: LimitedBody): void {
  ctx.status = status
  ctx.body = body
}
