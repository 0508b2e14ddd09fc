import type { BulkheadOptions as HttpBulkheadOptions } from '@sluice/http'
import { BulkheadEngine, type BulkheadHandles, withBulkheadHandles } from '@sluice/http/adapter'
import { respond } from '@sluice/http/node'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { expressRequest, expressResponse, type OnLimited } from './accessors'

/** Options of {@link bulkhead}: the options every sluice adapter shares, plus `onLimited`. */
export interface BulkheadOptions extends HttpBulkheadOptions<Request, Response> {
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: OnLimited
}

/** The middleware `bulkhead()` returns. */
export interface BulkheadMiddleware extends RequestHandler, BulkheadHandles {}

/**
 * Builds `bulkhead()` (or `@Bulkhead()`, named by `factory`); `run` answers one request
 * and returns what `respond` did, for a decorated method to follow.
 */
export function createBulkhead(options: BulkheadOptions | undefined, factory: string) {
  const engine = new BulkheadEngine({
    options,
    request: expressRequest,
    response: expressResponse,
    factory,
  })
  const run = (req: Request, res: Response, next: NextFunction) =>
    respond(engine.admit(req, res), req, res, next, expressResponse)
  function bulkhead(req: Request, res: Response, next: NextFunction): void {
    run(req, res, next)
  }
  return { run, middleware: withBulkheadHandles(bulkhead, engine) as BulkheadMiddleware }
}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken before the handler and held until its work is over: Express cannot
 * tell a middleware when a handler is done, so that is when the handler ends the
 * response (a streamed body holds it until the stream ends), also after its client went
 * away; a handler that never ends it after its client left holds it until `holdTimeout`
 * (default 1 minute). The handler gets `req.bulkhead.signal` to stop early. Full
 * bulkheads queue up to `maxQueue` requests, FIFO, else answer 503 + `Retry-After`.
 *
 * @example
 * ```ts
 * import express from 'express'
 * import { bulkhead } from '@sluice/express'
 *
 * const app = express()
 * app.get('/report', bulkhead({ max: 4, maxQueue: 20, queueTimeout: '5s' }), buildReport)
 * ```
 */
export function bulkhead(options?: BulkheadOptions): BulkheadMiddleware {
  return createBulkhead(options, 'bulkhead').middleware
}
