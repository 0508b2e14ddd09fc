import { readFunction } from '@sluice/core/validation'
import type { Decision, RateLimitInfo } from '@sluice/http'
import {
  type RateLimitOptions as HttpRateLimitOptions,
  RateLimitEngine,
  type RateLimitHandles,
  whenSettled,
  withRateLimitHandles,
} from '@sluice/http/adapter'
import type {
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestHookHandler,
} from 'fastify'
import { answer, fail, fastifyRequest, fastifyResponse } from './accessors'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The rate-limit decision `rateLimit()` made for this request: `{ limit, remaining,
     * resetMs, key, policy }`. With stacked hooks, the last one's; unset when skipped.
     */
    rateLimit?: RateLimitInfo
  }
}

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares, with Fastify's
 * request and reply in the callbacks, plus `onLimited`.
 */
export interface RateLimitOptions extends HttpRateLimitOptions<FastifyRequest, FastifyReply> {
  /**
   * Answers a refused request instead of the default `statusCode` + `message`: send a
   * reply. Headers and `Retry-After` are already set; `request.rateLimit` holds the decision.
   */
  onLimited?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => unknown
}

/** The hook `rateLimit()` returns, with a few handles on its state. */
export interface RateLimitHook extends onRequestHookHandler, RateLimitHandles {}

/**
 * Rate-limits requests per key (default: client address, `request.ip`) with one or
 * several policies, answering with RateLimit headers and `429` + `Retry-After` once over
 * the limit. An `onRequest` hook: for every route with `app.addHook('onRequest', hook)`,
 * or for one with `{ onRequest: hook }`. The decision is on `request.rateLimit`.
 *
 * @example
 * ```ts
 * import Fastify from 'fastify'
 * import { rateLimit } from '@sluice/fastify'
 *
 * const app = Fastify({ trustProxy: '10.0.0.0/8' })
 * app.addHook('onRequest', rateLimit({ limit: 100, window: '1m' }))
 * app.post('/login', { onRequest: rateLimit({ limit: 5, window: '15m' }) }, login)
 * ```
 */
export function rateLimit(options: RateLimitOptions = {}): RateLimitHook {
  const engine = new RateLimitEngine<FastifyRequest, FastifyReply>(
    options,
    fastifyRequest,
    fastifyResponse,
    'rateLimit',
    ['onLimited'],
  )
  const onLimited = readFunction('rateLimit', 'onLimited', options.onLimited)
  function rateLimit(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    whenSettled(
      engine.admit(request, reply),
      (outcome) => {
        if (outcome.decision !== undefined) request.rateLimit = outcome.decision
        answer(request, reply, done, outcome, onLimited)
      },
      (error) => fail(request, reply, done, error),
    )
  }
  return withRateLimitHandles(rateLimit, engine)
}
