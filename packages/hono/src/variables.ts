import type { BulkheadInfo, RateLimitInfo } from '@sluice/http'

/** The context variables `rateLimit()` and `bulkhead()` set. */
export interface RateLimitVariables {
  /**
   * The rate-limit decision for this request: `{ limit, remaining, resetMs, key, policy }`.
   * With stacked limiters, the last one's; unset when `skip` let the request pass.
   */
  rateLimit?: RateLimitInfo
  /**
   * The bulkhead slot this request runs in, with the `signal` that aborts when its client
   * leaves or `holdTimeout` passes. With stacked bulkheads, the last one's.
   */
  bulkhead?: BulkheadInfo
}

/**
 * The Hono `Env` of `rateLimit()`'s and `bulkhead()`'s middleware. Hono merges it into the handlers after
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
