import type { BulkheadOptions as HttpBulkheadOptions } from '@sluice/http'
import { BulkheadEngine, type BulkheadHandles, withBulkheadHandles } from '@sluice/http/adapter'
import { respond } from '@sluice/http/node'
import type { Context, Middleware, Next } from 'koa'
import { koaRequest, koaResponse, type OnLimited } from './accessors'

/**
 * Options of {@link bulkhead}: the options every sluice adapter shares, with Koa's `ctx`
 * as the request and response of the callbacks, plus `onLimited`.
 */
export interface BulkheadOptions extends HttpBulkheadOptions<Context, Context> {
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: OnLimited
}

/** The middleware `bulkhead()` returns. */
export interface BulkheadMiddleware extends Middleware, BulkheadHandles {}

/** Builds `bulkhead()`, or `@Bulkhead()` when `factory` names it so. */
export function createBulkhead(
  options: BulkheadOptions | undefined,
  factory: string,
): BulkheadMiddleware {
  const engine = new BulkheadEngine({
    options,
    request: koaRequest,
    response: koaResponse,
    factory,
  })
  function bulkhead(ctx: Context, next: Next) {
    return respond(engine.admit(ctx, ctx), ctx, ctx, next, koaResponse)
  }
  return withBulkheadHandles(bulkhead, engine)
}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken before the downstream middleware and held until its work is over (the
 * promise `next()` returned settled) and its response too (a streamed `ctx.body` holds it
 * until the stream ends), whether or not its client is still there; downstream that
 * throws frees it at once, and `holdTimeout` (default 1 minute) bounds it. The handler
 * gets `ctx.state.bulkhead.signal` to stop early. Full bulkheads queue up to `maxQueue`
 * requests, FIFO, else answer 503 + `Retry-After`.
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
export function bulkhead(options?: BulkheadOptions): BulkheadMiddleware {
  return createBulkhead(options, 'bulkhead')
}
