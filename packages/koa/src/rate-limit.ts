import { readFunction } from '@sluice/core/validation'
import type { Decision } from '@sluice/http'
import {
  type RateLimitOptions as HttpRateLimitOptions,
  outcomeUnlessGone,
  RateLimitEngine,
  type RateLimitHandles,
  withRateLimitHandles,
} from '@sluice/http/adapter'
import type { Context, Middleware, Next } from 'koa'
import { answer, isGone, koaRequest, koaResponse } from './accessors'
import type { RateLimitState } from './state'
import { type ValidateOption, Validations } from './validations'

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
  onLimited?: (ctx: Context, next: Next, decision: Decision) => unknown
  /** One-time configuration warnings (see `ValidateOption`). Default: all on. */
  validate?: ValidateOption
}

/** The middleware `rateLimit()` returns: a Koa middleware with a few handles on its state. */
export interface RateLimitMiddleware extends Middleware<RateLimitState>, RateLimitHandles {}

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
export function rateLimit(options: RateLimitOptions = {}): RateLimitMiddleware {
  const engine = new RateLimitEngine<Context, Context>(
    options,
    koaRequest,
    koaResponse,
    'rateLimit',
    ['onLimited', 'validate'],
  )
  const onLimited = readFunction('rateLimit', 'onLimited', options.onLimited)
  const validations = new Validations('rateLimit', options.validate)

  async function rateLimit(ctx: Context, next: Next): Promise<void> {
    validations.check(ctx)
    const outcome = await outcomeUnlessGone(engine.admit(ctx, ctx), () => isGone(ctx))
    if (outcome === undefined) return
    if (outcome.decision !== undefined) ctx.state.rateLimit = outcome.decision
    return answer(ctx, next, outcome, onLimited)
  }

  return withRateLimitHandles(rateLimit, engine)
}
