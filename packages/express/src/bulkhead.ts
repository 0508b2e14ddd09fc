import { readFunction } from '@sluice/core/validation'
import type { Decision } from '@sluice/http'
import {
  BulkheadEngine,
  type BulkheadHandles,
  type BulkheadOptions as HttpBulkheadOptions,
  whenSettled,
  withBulkheadHandles,
} from '@sluice/http/adapter'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { answer, expressRequest, expressResponse, fail } from './accessors'

/** Options of {@link bulkhead}: the options every sluice adapter shares, plus `onLimited`. */
export interface BulkheadOptions extends HttpBulkheadOptions<Request, Response> {
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: (req: Request, res: Response, next: NextFunction, decision: Decision) => unknown
}

/** The middleware `bulkhead()` returns. */
export interface BulkheadMiddleware extends RequestHandler, BulkheadHandles {}

/** The engine and per-request runner behind `bulkhead()` and `@Bulkhead()`. */
export interface BulkheadRunner {
  readonly engine: BulkheadEngine<Request, Response>
  /**
   * Runs the bulkhead for one request: on admission calls `proceed` (default `next()`),
   * the slot already tied to the response; `proceed` gets a `release` to free it early
   * (a decorated method that failed).
   */
  run(
    req: Request,
    res: Response,
    next: NextFunction,
    proceed?: (release: () => void) => void,
  ): void
}

/** Builds the engine and the per-request runner. */
export function createBulkhead(options: BulkheadOptions, factory: string): BulkheadRunner {
  const engine = new BulkheadEngine<Request, Response>(
    options,
    expressRequest,
    expressResponse,
    factory,
    ['onLimited'],
  )
  const onLimited = readFunction(factory, 'onLimited', options.onLimited)
  const run: BulkheadRunner['run'] = (req, res, next, proceed) => {
    whenSettled(
      engine.admit(req, res),
      (outcome) =>
        answer(
          req,
          res,
          next,
          outcome,
          onLimited,
          proceed && (() => proceed(() => outcome.done(false))),
        ),
      (error) => fail(req, res, next, error),
    )
  }
  return { engine, run }
}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken before the handler and released exactly once: when the response has
 * finished (a streamed body holds it until the stream ends), when the client goes away
 * (a request pipelined behind another included), or when the handler fails and Express
 * answers with an error. Full bulkheads queue up to `maxQueue` requests, FIFO, else
 * answer 503 + `Retry-After`.
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
export function bulkhead(options: BulkheadOptions = {}): BulkheadMiddleware {
  const { engine, run } = createBulkhead(options, 'bulkhead')
  function bulkhead(req: Request, res: Response, next: NextFunction): void {
    run(req, res, next)
  }
  return withBulkheadHandles(bulkhead, engine)
}
