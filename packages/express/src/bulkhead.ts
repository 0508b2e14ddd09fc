import {
  type BulkheadDecision,
  BulkheadEngine,
  type BulkheadOptions as HttpBulkheadOptions,
  type MaybePromise,
  type Policy,
  type Store,
} from '@sluice/http'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { expressRequest, expressResponse, isGone, sendBody } from './accessors'

/** Options of {@link bulkhead}: the options every sluice adapter shares (DESIGN §4). */
export interface BulkheadOptions extends HttpBulkheadOptions<Request, Response> {
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: (
    req: Request,
    res: Response,
    next: NextFunction,
    decision: BulkheadDecision,
  ) => unknown
}

/** The middleware `bulkhead()` returns. */
export interface BulkheadMiddleware extends RequestHandler {
  /** The bulkhead's concurrency policy. */
  readonly policies: readonly Policy[]
  /** Where slots are counted. */
  readonly store: Store
  /** Requests waiting for a slot under `key` (default: the global key). */
  queued(key?: string): number
}

/** The engine and per-request runner behind `bulkhead()` and `@Bulkhead()`. */
export interface BulkheadRunner {
  readonly engine: BulkheadEngine<Request, Response>
  run(
    req: Request,
    res: Response,
    next: NextFunction,
    proceed?: (decision: BulkheadDecision) => void,
  ): void
}

/**
 * Runs the bulkhead for one request: on admission calls `proceed` (default `next()`) with
 * the decision, whose slot is already tied to the response (released on `finish` or
 * `close`, exactly once); on refusal answers 503 + `Retry-After` (or calls `onLimited`).
 */
export function createBulkhead(options: BulkheadOptions, factory: string): BulkheadRunner {
  const engine = new BulkheadEngine<Request, Response>(
    options,
    expressRequest,
    expressResponse,
    factory,
    ['onLimited'],
  )
  const { onLimited } = options
  if (onLimited !== undefined && typeof onLimited !== 'function') {
    throw new TypeError(`${factory}: "onLimited" must be a function, got ${typeof onLimited}`)
  }

  const apply = (
    req: Request,
    res: Response,
    next: NextFunction,
    decision: BulkheadDecision,
    proceed: ((decision: BulkheadDecision) => void) | undefined,
  ) => {
    engine.writeHeaders(res, decision)
    if (decision.allowed) {
      // 'finish': the response is fully handed to the OS (a streamed body has ended).
      // 'close': the client went away first. Either frees the slot; release is idempotent.
      res.once('finish', decision.release)
      res.once('close', decision.release)
      if (isGone(req, res)) {
        decision.release()
        return
      }
      if (proceed === undefined) next()
      else proceed(decision)
      return
    }
    res.setHeader('Retry-After', engine.retryAfter())
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

  const run = (
    req: Request,
    res: Response,
    next: NextFunction,
    proceed?: (decision: BulkheadDecision) => void,
  ) => {
    let entered: MaybePromise<BulkheadDecision>
    try {
      entered = engine.enter(req, res)
    } catch (error) {
      next(error)
      return
    }
    if (entered instanceof Promise) {
      entered.then(
        (decision) => apply(req, res, next, decision, proceed),
        (error: unknown) => {
          if (!isGone(req, res)) next(error)
        },
      )
    } else {
      apply(req, res, next, entered, proceed)
    }
  }

  return { engine, run }
}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken before the handler and released exactly once: when the response has
 * finished (a streamed body holds it until the stream ends), when the client goes away,
 * or when the handler fails and Express answers with an error. Full bulkheads queue up to
 * `maxQueue` requests, FIFO, else answer 503 + `Retry-After`.
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
  return Object.assign(bulkhead, {
    policies: engine.policies,
    store: engine.store,
    queued: (key?: string) => engine.queued(key),
  })
}
