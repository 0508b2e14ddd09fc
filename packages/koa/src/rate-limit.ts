import {
  type Decision,
  type RateLimitOptions as HttpRateLimitOptions,
  type MaybePromise,
  type Policy,
  RateLimitEngine,
  type Store,
} from '@sluice/http'
import type { Context, Middleware, Next } from 'koa'
import { isGone, koaRequest, koaResponse, refuse } from './accessors'
import type { RateLimitState } from './state'
import { type ValidateOption, Validations } from './validations'

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares (DESIGN §4), with
 * Koa's `ctx` as both the request and the response of the callbacks (so
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
export interface RateLimitMiddleware extends Middleware<RateLimitState> {
  /** The validated policies, in the order given. */
  readonly policies: readonly Policy[]
  /** Where the per-key state lives. */
  readonly store: Store
  /** Forgets a key's state under this middleware's policies. */
  resetKey(key: string): MaybePromise<void>
}

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
  const { onLimited } = options
  if (onLimited !== undefined && typeof onLimited !== 'function') {
    throw new TypeError(`rateLimit: "onLimited" must be a function, got ${typeof onLimited}`)
  }
  const validations = new Validations('rateLimit', options.validate)

  async function rateLimit(ctx: Context, next: Next): Promise<void> {
    validations.check(ctx)
    let decision: Decision | undefined
    try {
      const decided = engine.decide(ctx, ctx)
      decision = decided instanceof Promise ? await decided : decided
    } catch (error) {
      // A client that left while its request waited has nobody to answer.
      if (isGone(ctx)) return
      throw error
    }
    if (decision === undefined) return next()
    ctx.state.rateLimit = decision
    engine.writeHeaders(ctx, decision)
    if (decision.allowed) {
      // 'finish' only: a response the client abandoned is never refunded.
      if (engine.refunds)
        ctx.res.once('finish', () => engine.settleAfterResponse(ctx, ctx, decision))
      return next()
    }
    ctx.set('Retry-After', engine.retryAfter(decision))
    if (onLimited !== undefined) {
      await onLimited(ctx, next, decision)
      return
    }
    const body = engine.message(ctx, ctx)
    refuse(ctx, engine.statusCode, body instanceof Promise ? await body : body)
  }

  return Object.assign(rateLimit, {
    policies: engine.policies,
    store: engine.store,
    resetKey: (key: string) => engine.resetKey(key),
  })
}
