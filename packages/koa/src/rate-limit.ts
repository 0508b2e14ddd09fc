import { readFunction } from '@sluice/core/validation'
import type { Decision, KeyState, MaybePromise, Policy, Store } from '@sluice/http'
import {
  type RateLimitOptions as HttpRateLimitOptions,
  RateLimitEngine,
} from '@sluice/http/adapter'
import type { Context, Middleware, Next } from 'koa'
import { answer, koaRequest, koaResponse, settle } from './accessors'
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
export interface RateLimitMiddleware extends Middleware<RateLimitState> {
  /** The policies (for limits that depend on the request: those met so far). */
  readonly policies: readonly Policy[]
  /** Where the per-key state lives. */
  readonly store: Store
  /** Each policy's state for `key`, taking nothing. */
  get(key: string): MaybePromise<readonly KeyState[]>
  /** Forgets a key's state (and any block) under this middleware's policies. */
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
  const onLimited = readFunction('rateLimit', 'onLimited', options.onLimited)
  const validations = new Validations('rateLimit', options.validate)

  async function rateLimit(ctx: Context, next: Next): Promise<void> {
    validations.check(ctx)
    const outcome = await settle(ctx, engine.admit(ctx, ctx))
    if (outcome === undefined) return
    if (outcome.decision !== undefined) ctx.state.rateLimit = outcome.decision
    return answer(ctx, next, outcome, onLimited)
  }

  return Object.assign(rateLimit, {
    get policies() {
      return engine.policies
    },
    store: engine.store,
    get: (key: string) => engine.get(key),
    resetKey: (key: string) => engine.resetKey(key),
  })
}
