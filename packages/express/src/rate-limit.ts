import {
  type Decision,
  type RateLimitOptions as HttpRateLimitOptions,
  type MaybePromise,
  type Policy,
  RateLimitEngine,
  type Store,
} from '@sluice/http'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { expressRequest, expressResponse, isGone, sendBody } from './accessors'
import { type ValidateOption, Validations } from './validations'

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares (DESIGN §4), with
 * Express's request and response in the callbacks, plus `onLimited` and `validate`.
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
export interface RateLimitMiddleware extends RequestHandler {
  /** The validated policies, in the order given. */
  readonly policies: readonly Policy[]
  /** Where the per-key state lives. */
  readonly store: Store
  /** Forgets a key's state under this middleware's policies. */
  resetKey(key: string): MaybePromise<void>
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
  const engine = new RateLimitEngine<Request, Response>(
    options,
    expressRequest,
    expressResponse,
    'rateLimit',
    ['onLimited', 'validate'],
  )
  const { onLimited } = options
  if (onLimited !== undefined && typeof onLimited !== 'function') {
    throw new TypeError(`rateLimit: "onLimited" must be a function, got ${typeof onLimited}`)
  }
  const validations = new Validations('rateLimit', options.validate)

  const fail = (req: Request, res: Response, next: NextFunction, error: unknown) => {
    // A client that left while its request waited has nobody to answer.
    if (!isGone(req, res)) next(error)
  }

  const apply = (
    req: Request,
    res: Response,
    next: NextFunction,
    decision: Decision | undefined,
  ) => {
    if (decision === undefined) {
      next()
      return
    }
    req.rateLimit = decision
    engine.writeHeaders(res, decision)
    if (decision.allowed) {
      if (engine.refunds) res.once('finish', () => engine.settleAfterResponse(req, res, decision))
      next()
      return
    }
    res.setHeader('Retry-After', engine.retryAfter(decision))
    if (onLimited !== undefined) {
      const handled = onLimited(req, res, next, decision)
      if (handled instanceof Promise) handled.catch(next)
      return
    }
    res.status(engine.statusCode)
    const body = engine.message(req, res)
    if (body instanceof Promise) body.then((b) => sendBody(res, b), next)
    else sendBody(res, body)
  }

  function rateLimit(req: Request, res: Response, next: NextFunction): void {
    validations.check(req)
    let decided: MaybePromise<Decision | undefined>
    try {
      decided = engine.decide(req, res)
    } catch (error) {
      next(error)
      return
    }
    if (decided instanceof Promise) {
      decided.then(
        (decision) => apply(req, res, next, decision),
        (error: unknown) => fail(req, res, next, error),
      )
    } else {
      apply(req, res, next, decided)
    }
  }

  return Object.assign(rateLimit, {
    policies: engine.policies,
    store: engine.store,
    resetKey: (key: string) => engine.resetKey(key),
  })
}
