import { readFunction } from '@sluice/core/validation'
import type { Decision } from '@sluice/http'
import {
  BulkheadEngine,
  type BulkheadHandles,
  type BulkheadOptions as HttpBulkheadOptions,
  whenSettled,
  withBulkheadHandles,
} from '@sluice/http/adapter'
import type {
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestHookHandler,
} from 'fastify'
import { answer, fail, fastifyRequest, fastifyResponse } from './accessors'

/** Options of {@link bulkhead}: the options every sluice adapter shares, plus `onLimited`. */
export interface BulkheadOptions extends HttpBulkheadOptions<FastifyRequest, FastifyReply> {
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => unknown
}

/** The hook `bulkhead()` returns. */
export interface BulkheadHook extends onRequestHookHandler, BulkheadHandles {}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken in `onRequest` and released exactly once: when the response has
 * finished (a streamed body holds it until the stream ends), when the client goes away
 * (a request pipelined behind another included), or after Fastify answered a failed
 * handler. Full bulkheads queue up to `maxQueue` requests, FIFO, else answer 503 +
 * `Retry-After`.
 *
 * @example
 * ```ts
 * app.get('/report', { onRequest: bulkhead({ max: 4, maxQueue: 20, queueTimeout: '5s' }) }, buildReport)
 * ```
 */
export function bulkhead(options: BulkheadOptions = {}): BulkheadHook {
  const engine = new BulkheadEngine<FastifyRequest, FastifyReply>(
    options,
    fastifyRequest,
    fastifyResponse,
    'bulkhead',
    ['onLimited'],
  )
  const onLimited = readFunction('bulkhead', 'onLimited', options.onLimited)
  function bulkhead(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    whenSettled(
      engine.admit(request, reply),
      (outcome) => answer(request, reply, done, outcome, onLimited),
      (error) => fail(request, reply, done, error),
    )
  }
  return withBulkheadHandles(bulkhead, engine)
}
