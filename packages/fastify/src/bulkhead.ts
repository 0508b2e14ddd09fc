import type { BulkheadOptions as HttpBulkheadOptions } from '@sluice/http'
import { BulkheadEngine, type BulkheadHandles, withBulkheadHandles } from '@sluice/http/adapter'
import { respond } from '@sluice/http/node'
import type {
  HookHandlerDoneFunction as Done,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
} from 'fastify'
import { fastifyRequest, fastifyResponse, type OnLimited } from './accessors'
import { watchHandlers } from './handlers'

/** Options of {@link bulkhead}: the options every sluice adapter shares, plus `onLimited`. */
export interface BulkheadOptions extends HttpBulkheadOptions<FastifyRequest, FastifyReply> {
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: OnLimited
}

/** The hook `bulkhead()` returns. */
export interface BulkheadHook extends onRequestHookHandler, BulkheadHandles {}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken in `onRequest` and held until the route handler is done (it returned,
 * or its promise settled) and its response is over (a streamed body holds it until the
 * stream ends), whether or not its client is still there; `holdTimeout` (default 1
 * minute) bounds it. The handler gets `request.bulkhead.signal` to stop early. Full
 * bulkheads queue up to `maxQueue` requests, FIFO, else answer 503 + `Retry-After`.
 *
 * @example
 * ```ts
 * app.get('/report', { onRequest: bulkhead({ max: 4, maxQueue: 20, queueTimeout: '5s' }) }, buildReport)
 * ```
 */
export function bulkhead(options?: BulkheadOptions): BulkheadHook {
  const engine = new BulkheadEngine({ options, request: fastifyRequest, response: fastifyResponse })
  watchHandlers()
  function bulkhead(request: FastifyRequest, reply: FastifyReply, done: Done): void {
    respond(engine.admit(request, reply), request, reply, done, fastifyResponse)
  }
  return withBulkheadHandles(bulkhead, engine)
}
