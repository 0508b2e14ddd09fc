import type { RateLimitInfo } from '@sluice/http'

declare global {
  namespace Express {
    interface Request {
      /**
       * The rate-limit decision `rateLimit()` made for this request: `{ limit, remaining,
       * resetMs, key, policy }`. With stacked limiters, the last one's.
       */
      rateLimit?: RateLimitInfo
    }
  }
}
