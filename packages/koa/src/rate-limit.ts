import type { RateLimitOptions as HttpRateLimitOptions, ProxyValidateOption } from '@sluice/http'
import { RateLimitEngine, type RateLimitHandles, withRateLimitHandles } from '@sluice/http/adapter'
import { respond } from '@sluice/http/node'
import type { Context, Middleware, Next } from 'koa'
import { koaRequest, koaResponse, type OnLimited } from './accessors'
import type { RateLimitState } from './state'

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares, with Koa's `ctx`
 * as both the request and the response of the callbacks (so
 * `refundWhen: (ctx) => ctx.status < 400`), plus `onLimited` and `validate`.
 */
export interface RateLimitOptions extends HttpRateLimitOptions<Context, Context> {
  /**
   * Answers a refused request instead of the default `statusCode` + `message`. Headers and
   * `Retry-After` are already set; `ctx.state.rateLimit` holds the decision. Calling
   * `next()` lets the request through after all.
   */
  onLimited?: OnLimited
  /** One-time configuration warnings (see `ProxyValidateOption`). Default: all on. */
  validate?: ProxyValidateOption
}

/** The middleware `rateLimit()` returns: a Koa middleware with a few handles on its state. */
export interface RateLimitMiddleware
  extends Middleware<RateLimitState>,
    RateLimitHandles<Context> {}

/**
 * Rate-limits requests per key (default: client address, `ctx.ip`) with one or several
 * policies, answering with RateLimit headers and `429` + `Retry-After` once over the
 * limit. Works with `app.use`, on an `@koa/router` router, or on one route; the decision
 * is on `ctx.state.rateLimit`.
 *
 * @example
 * ```ts
 * import Koa from 'koa'
 * import Router from '@koa/router'
 * import { keys, rateLimit } from '@sluice/koa'
 *
 * const app = new Koa({ proxy: true, maxIpsCount: 1 })
 * const router = new Router()
 * app.use(rateLimit({ limit: 100, window: '1m' }))
 * router.post('/login', rateLimit({ limit: 5, window: '15m', key: keys.ip() }), login)
 * app.use(router.routes())
 * ```
 */
export function rateLimit(options?: RateLimitOptions): RateLimitMiddleware {
  const engine = new RateLimitEngine({ options, request: koaRequest, response: koaResponse })
  function rateLimit(ctx: Context, next: Next) {
    return respond(engine.admit(ctx, ctx), ctx, ctx, next, koaResponse)
  }
  return withRateLimitHandles(rateLimit, engine)
}
