import { readFunction } from '@sluice/core/validation'
import type { Decision } from '@sluice/http'
import {
  BulkheadEngine,
  type BulkheadHandles,
  type BulkheadOptions as HttpBulkheadOptions,
  outcomeUnlessGone,
  withBulkheadHandles,
} from '@sluice/http/adapter'
import type { Context, Middleware, Next } from 'koa'
import { answer, isGone, koaRequest, koaResponse } from './accessors'

/**
 * Options of {@link bulkhead}: the options every sluice adapter shares, with Koa's `ctx`
 * as the request and response of the callbacks, plus `onLimited`.
 */
export interface BulkheadOptions extends HttpBulkheadOptions<Context, Context> {
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: (ctx: Context, next: Next, decision: Decision) => unknown
}

/** The middleware `bulkhead()` returns. */
export interface BulkheadMiddleware extends Middleware, BulkheadHandles {}

/** Builds the engine and the middleware behind `bulkhead()` and `@Bulkhead()`. */
export function createBulkhead(
  options: BulkheadOptions,
  factory: string,
): {
  engine: BulkheadEngine<Context, Context>
  middleware: (ctx: Context, next: Next) => Promise<void>
} {
  const engine = new BulkheadEngine<Context, Context>(options, koaRequest, koaResponse, factory, [
    'onLimited',
  ])
  const onLimited = readFunction(factory, 'onLimited', options.onLimited)
  async function bulkhead(ctx: Context, next: Next): Promise<void> {
    const outcome = await outcomeUnlessGone(engine.admit(ctx, ctx), () => isGone(ctx))
    if (outcome === undefined) return
    return answer(ctx, next, outcome, onLimited)
  }
  return { engine, middleware: bulkhead }
}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken before the downstream middleware and released exactly once: when the
 * response has finished (a streamed `ctx.body` holds it until the stream ends), when the
 * client goes away (a request pipelined behind another included), or when downstream
 * throws. Full bulkheads queue up to `maxQueue` requests, FIFO, else answer 503 +
 * `Retry-After`.
 *
 * @example
 * ```ts
 * import Router from '@koa/router'
 * import { bulkhead } from '@sluice/koa'
 *
 * const router = new Router()
 * router.get('/report', bulkhead({ max: 4, maxQueue: 20, queueTimeout: '5s' }), buildReport)
 * ```
 */
export function bulkhead(options: BulkheadOptions = {}): BulkheadMiddleware {
  const { engine, middleware } = createBulkhead(options, 'bulkhead')
  return withBulkheadHandles(middleware, engine)
}
