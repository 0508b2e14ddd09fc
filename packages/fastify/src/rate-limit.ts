import type {
  BulkheadInfo,
  RateLimitOptions as HttpRateLimitOptions,
  ProxyValidateOption,
  RateLimitInfo,
} from '@sluice/http'
import { RateLimitEngine, type RateLimitHandles, withRateLimitHandles } from '@sluice/http/adapter'
import { respond } from '@sluice/http/node'
import type {
  HookHandlerDoneFunction as Done,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
} from 'fastify'
import { fastifyRequest, fastifyResponse, type OnLimited } from './accessors'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The rate-limit decision `rateLimit()` made for this request: `{ limit, remaining,
     * resetMs, key, policy }`. With stacked hooks, the last one's; unset when skipped.
     */
    rateLimit?: RateLimitInfo
    /**
     * The bulkhead slot this request runs in, with the `signal` that aborts when its
     * client leaves or `holdTimeout` passes. With stacked bulkheads, the last one's.
     */
    bulkhead?: BulkheadInfo
  }
}

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares, with Fastify's
 * request and reply in the callbacks, plus `onLimited` and `validate`.
 */
export interface RateLimitOptions extends HttpRateLimitOptions<FastifyRequest, FastifyReply> {
  /**
   * Answers a refused request instead of the default `statusCode` + `message`: send a
   * reply. Headers and `Retry-After` are already set; `request.rateLimit` holds the decision.
   */
  onLimited?: OnLimited
  /** One-time configuration warnings (see `ProxyValidateOption`). Default: all on. */
  validate?: ProxyValidateOption
}

/** The hook `rateLimit()` returns, with a few handles on its state. */
export interface RateLimitHook extends onRequestHookHandler, RateLimitHandles<FastifyRequest> {}

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
export function rateLimit(options?: RateLimitOptions): RateLimitHook {
  const engine = new RateLimitEngine({
    options,
    request: fastifyRequest,
    response: fastifyResponse,
  })
  function rateLimit(request: FastifyRequest, reply: FastifyReply, done: Done): void {
    respond(engine.admit(request, reply), request, reply, done, fastifyResponse)
  }
  return withRateLimitHandles(rateLimit, engine)
}
