import {
  isPromiseLike,
  type Outcome,
  type RequestAccessors,
  type ResponseAccessors,
} from '@sluice/http/adapter'
import { isClientGone, requestSignal, whenResponseOver } from '@sluice/http/node'
import type { Context, Next } from 'koa'

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

/**
 * How `@sluice/http` writes to and watches a Koa response. Headers go to the Node response
 * as `ctx.set()` would put them (it calls `res.setHeader` for a string), without Koa's
 * delegation and argument juggling on the way.
 */
export const koaResponse: ResponseAccessors<Context, Context> = {
  getHeader: (ctx, name) => ctx.res.getHeader(name),
  setHeader: (ctx, name, value) => {
    if (!ctx.res.headersSent) ctx.res.setHeader(name, value)
  },
  signal: (ctx) => requestSignal(ctx.req, ctx.res),
  status: (ctx) => ctx.status,
}

/** True once the client can no longer receive this response. */
export const isGone = (ctx: Context): boolean => isClientGone(ctx.req, ctx.res)

/**
 * Carries out an outcome in Koa: the rest of the chain for a pass (the response watched
 * when the outcome holds something: Koa sends a streamed body after the chain returns),
 * `onLimited` or the prepared refusal. A failure downstream ends what the outcome holds
 * at once, before an error middleware answers.
 */
export async function answer<D>(
  ctx: Context,
  next: Next,
  outcome: Outcome,
  onLimited: ((ctx: Context, next: Next, decision: D) => unknown) | undefined,
): Promise<void> {
  if (outcome.action === 'refuse') {
    if (onLimited !== undefined) {
      await onLimited(ctx, next, outcome.decision as D)
      return
    }
    const refusal = outcome.refusal()
    const { contentType, body } = isPromiseLike(refusal) ? await refusal : refusal
    ctx.status = outcome.status
    ctx.type = contentType
    ctx.body = body
    return
  }
  if (!outcome.holds) return next()
  whenResponseOver(ctx.req, ctx.res, outcome)
  // A client that left while the request waited: its slot is already free, nobody to answer.
  if (isGone(ctx)) return
  try {
    await next()
  } catch (error) {
    outcome.done(false)
    throw error
  }
}
