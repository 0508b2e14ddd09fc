import type { RateLimitOptions as HttpRateLimitOptions } from '@sluice/http'
import { RateLimitEngine, type RateLimitHandles, withRateLimitHandles } from '@sluice/http/adapter'
import type { Context, MiddlewareHandler, Next } from 'hono'
import type { OnLimited, ValidateOption } from './accessors'
import type { GetIp } from './client-address'
import { honoEngine } from './middleware'
import type { RateLimitEnv } from './variables'

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares, with Hono's `c`
 * as both the request and the response of the callbacks (so
 * `refundWhen: (c) => c.res.status < 400`), plus `getIp`, `onLimited` and `validate`.
 */
export interface RateLimitOptions extends HttpRateLimitOptions<Context, Context> {
  /**
   * Reads the client address that `keys.ip()` (the default key) uses. Default: the peer
   * the runtime reports: `@hono/node-server`'s socket, Bun's `server.requestIP()`, Deno's
   * `remoteAddr`, or the `cf-connecting-ip` header on Cloudflare Workers. Behind a reverse
   * proxy, or on another runtime, pass your own (see the README).
   */
  getIp?: GetIp
  /**
   * Answers a refused request instead of the default `statusCode` + `message`. Headers and
   * `Retry-After` are already set on `c`; `c.get('rateLimit')` holds the decision.
   * Returning `next()` lets the request through after all.
   */
  onLimited?: OnLimited
  /** One-time configuration warnings (see `ValidateOption`). Default: all on. */
  validate?: ValidateOption
}

/** The middleware `rateLimit()` returns: a Hono middleware with a few handles on its state. */
export type RateLimitMiddleware = MiddlewareHandler<RateLimitEnv> & RateLimitHandles<Context>

/** Builds `rateLimit()`, or `@RateLimit()` when `factory` names it so. */
export function createRateLimit(
  options: RateLimitOptions | undefined,
  factory: string,
): RateLimitMiddleware {
  const { engine, handle } = honoEngine(RateLimitEngine, options, factory)
  function rateLimit(c: Context<RateLimitEnv>, next: Next): Promise<undefined> {
    return handle(c as Context, next)
  }
  return withRateLimitHandles(rateLimit, engine)
}

/**
 * Rate-limits requests per key (default: client address) with one or several policies,
 * answering with RateLimit headers and `429` + `Retry-After` once over the limit. Works
 * with `app.use`, on a sub-app, or on one route; the decision is on `c.get('rateLimit')`,
 * typed in the handlers that follow.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono'
 * import { keys, rateLimit } from '@sluice/hono'
 *
 * const app = new Hono()
 * app.use(rateLimit({ limit: 100, window: '1m' }))
 * app.post('/login', rateLimit({ limit: 5, window: '15m', key: keys.ip() }), (c) =>
 *   c.json({ left: c.var.rateLimit?.remaining }),
 * )
 * ```
 */
export function rateLimit(options?: RateLimitOptions): RateLimitMiddleware {
  return createRateLimit(options, 'rateLimit')
}
