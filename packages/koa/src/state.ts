import type { RateLimitInfo } from '@sluice/http'

/** What `rateLimit()` adds to `ctx.state`; `app.use(rateLimit())` infers it too. */
export interface RateLimitState {
  /**
   * The rate-limit decision `rateLimit()` made for this request: `{ limit, remaining,
   * resetMs, key, policy }`. With stacked limiters, the last one's; unset when skipped.
   */
  rateLimit?: RateLimitInfo
}

declare module 'koa' {
  interface DefaultState extends RateLimitState {}
}
