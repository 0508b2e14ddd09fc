import type { BulkheadInfo, RateLimitInfo } from '@sluice/http'

declare global {
  namespace Express {
    interface Request {
      /**
       * The rate-limit decision `rateLimit()` made for this request: `{ limit, remaining,
       * resetMs, key, policy }`. With stacked limiters, the last one's.
       */
      rateLimit?: RateLimitInfo
      /**
       * The bulkhead slot this request runs in, with the `signal` that aborts when its
       * client leaves or `holdTimeout` passes. With stacked bulkheads, the last one's.
       */
      bulkhead?: BulkheadInfo
    }
  }
}
