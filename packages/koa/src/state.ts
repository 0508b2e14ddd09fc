import type { BulkheadInfo, RateLimitInfo } from '@sluice/http'

/** What `rateLimit()` and `bulkhead()` add to `ctx.state`; `app.use(rateLimit())` infers it too. */
export interface RateLimitState {
  /**
   * The rate-limit decision `rateLimit()` made for this request: `{ limit, remaining,
   * resetMs, key, policy }`. With stacked limiters, the last one's; unset when skipped.
   */
  rateLimit?: RateLimitInfo
  /**
   * The bulkhead slot this request runs in, with the `signal` that aborts when its client
   * leaves or `holdTimeout` passes. With stacked bulkheads, the last one's.
   */
  bulkhead?: BulkheadInfo
}

declare module 'koa' {
  interface DefaultState extends RateLimitState {}
}
