import type { RateLimitInfo } from '@sluice/http'

/** The context variables `rateLimit()` sets. */
export interface RateLimitVariables {
  /**
   * The rate-limit decision for this request: `{ limit, remaining, resetMs, key, policy }`.
   * With stacked limiters, the last one's; unset when `skip` let the request pass.
   */
  rateLimit?: RateLimitInfo
}

/**
 * The Hono `Env` of `rateLimit()`'s middleware. Hono merges it into the handlers after
 * it, on a route or after `app.use()`, so `c.get('rateLimit')` and `c.var.rateLimit` are
 * typed there without any global declaration.
 *
 * @example
 * ```ts
 * app.get('/quota', rateLimit({ limit: 10 }), (c) => c.json({ left: c.var.rateLimit?.remaining }))
 * ```
 */
export interface RateLimitEnv {
  Variables: RateLimitVariables
}
