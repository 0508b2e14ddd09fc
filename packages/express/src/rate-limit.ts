import type { RateLimitOptions as HttpRateLimitOptions, ProxyValidateOption } from '@sluice/http'
import { RateLimitEngine, type RateLimitHandles, withRateLimitHandles } from '@sluice/http/adapter'
import { respond } from '@sluice/http/node'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { expressRequest, expressResponse, type OnLimited } from './accessors'

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares, with Express's
 * request and response in the callbacks, plus `onLimited` and `validate`.
 */
export interface RateLimitOptions extends HttpRateLimitOptions<Request, Response> {
  /**
   * Answers a refused request instead of the default `statusCode` + `message`. Headers and
   * `Retry-After` are already set; `req.rateLimit` holds the decision.
   */
  onLimited?: OnLimited
  /** One-time configuration warnings (see `ProxyValidateOption`). Default: all on. */
  validate?: ProxyValidateOption
}

/** The middleware `rateLimit()` returns: a request handler with a few handles on its state. */
export interface RateLimitMiddleware extends RequestHandler, RateLimitHandles<Request> {}

/**
 * Builds `rateLimit()` (or `@RateLimit()`, named by `factory`); `run` answers one request
 * and returns what `respond` did, for a decorated method to follow.
 */
export function createRateLimit(options: RateLimitOptions | undefined, factory: string) {
  const engine = new RateLimitEngine({
    options,
    request: expressRequest,
    response: expressResponse,
    factory,
  })
  const run = (req: Request, res: Response, next: NextFunction) =>
    respond(engine.admit(req, res), req, res, next, expressResponse)
  function rateLimit(req: Request, res: Response, next: NextFunction): void {
    run(req, res, next)
  }
  return { run, middleware: withRateLimitHandles(rateLimit, engine) as RateLimitMiddleware }
}

/**
 * Rate-limits requests per key (default: client address) with one or several policies,
 * answering with RateLimit headers and `429` + `Retry-After` once over the limit. Works
 * with `app.use`, on a router, or on one route; the decision is on `req.rateLimit`.
 *
 * @example
 * ```ts
 * import express from 'express'
 * import { keys, rateLimit } from '@sluice/express'
 *
 * const app = express()
 * app.set('trust proxy', 1)
 * app.use(rateLimit({ limit: 100, window: '1m' }))
 * app.post('/login', rateLimit({ limit: 5, window: '15m', key: keys.ip() }), login)
 * ```
 */
export function rateLimit(options?: RateLimitOptions): RateLimitMiddleware {
  return createRateLimit(options, 'rateLimit').middleware
}
