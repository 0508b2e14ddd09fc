import { readFunction } from '@sluice/core/validation'
import type { Decision } from '@sluice/http'
import {
  type RateLimitOptions as HttpRateLimitOptions,
  RateLimitEngine,
  type RateLimitHandles,
  whenSettled,
  withRateLimitHandles,
} from '@sluice/http/adapter'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { answer, expressRequest, expressResponse, fail } from './accessors'
import { type ValidateOption, Validations } from './validations'

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares, with Express's
 * request and response in the callbacks, plus `onLimited` and `validate`.
 */
export interface RateLimitOptions extends HttpRateLimitOptions<Request, Response> {
  /**
   * Answers a refused request instead of the default `statusCode` + `message`. Headers and
   * `Retry-After` are already set; `req.rateLimit` holds the decision.
   */
  onLimited?: (req: Request, res: Response, next: NextFunction, decision: Decision) => unknown
  /** One-time configuration warnings (see `ValidateOption`). Default: all on. */
  validate?: ValidateOption
}

/** The middleware `rateLimit()` returns: a request handler with a few handles on its state. */
export interface RateLimitMiddleware extends RequestHandler, RateLimitHandles {}

/** Builds the engine and the per-request runner behind `rateLimit()`. */
function createRateLimit(
  options: RateLimitOptions,
  factory: string,
): {
  engine: RateLimitEngine<Request, Response>
  run: (req: Request, res: Response, next: NextFunction, proceed?: () => void) => void
} {
  const engine = new RateLimitEngine<Request, Response>(
    options,
    expressRequest,
    expressResponse,
    factory,
    ['onLimited', 'validate'],
  )
  const onLimited = readFunction(factory, 'onLimited', options.onLimited)
  const validations = new Validations(factory, options.validate)
  const run = (req: Request, res: Response, next: NextFunction, proceed?: () => void) => {
    validations.check(req)
    whenSettled(
      engine.admit(req, res),
      (outcome) => {
        if (outcome.decision !== undefined) req.rateLimit = outcome.decision
        answer(req, res, next, outcome, onLimited, proceed)
      },
      (error) => fail(req, res, next, error),
    )
  }
  return { engine, run }
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
export function rateLimit(options: RateLimitOptions = {}): RateLimitMiddleware {
  const { engine, run } = createRateLimit(options, 'rateLimit')
  function rateLimit(req: Request, res: Response, next: NextFunction): void {
    run(req, res, next)
  }
  return withRateLimitHandles(rateLimit, engine)
}
