import type { BulkheadOptions as HttpBulkheadOptions } from '@sluice/http'
import { BulkheadEngine, type BulkheadHandles, withBulkheadHandles } from '@sluice/http/adapter'
import type { Context, MiddlewareHandler, Next } from 'hono'
import type { OnLimited, ValidateOption } from './accessors'
import type { GetIp } from './client-address'
import { honoEngine } from './middleware'
import type { RateLimitEnv } from './variables'

/**
 * Options of {@link bulkhead}: the options every sluice adapter shares, with Hono's `c` as
 * the request and response of the callbacks, plus `getIp` (for a key by client address),
 * `onLimited` and `validate`.
 */
export interface BulkheadOptions extends HttpBulkheadOptions<Context, Context> {
  /** Reads the client address, should `key` use `keys.ip()`. Default as in `rateLimit()`. */
  getIp?: GetIp
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: OnLimited
  /** One-time configuration warnings (see `ValidateOption`). Default: all on. */
  validate?: ValidateOption
}

/** The middleware `bulkhead()` returns. */
export type BulkheadMiddleware = MiddlewareHandler<RateLimitEnv> & BulkheadHandles

/** Builds `bulkhead()`, or `@Bulkhead()` when `factory` names it so. */
export function createBulkhead(
  options: BulkheadOptions | undefined,
  factory: string,
): BulkheadMiddleware {
  const { engine, handle } = honoEngine(BulkheadEngine, options, factory)
  function bulkhead(c: Context<RateLimitEnv>, next: Next): Promise<undefined> {
    return handle(c as Context, next)
  }
  return withBulkheadHandles(bulkhead, engine)
}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken before the handler and held until its work is over (the promise
 * `next()` returned settled) and its response too (a streamed body until it has been
 * read or cancelled), whether or not its client is still there; a handler that throws
 * frees it at once, and `holdTimeout` (default 1 minute) bounds it. The handler gets
 * `c.get('bulkhead').signal` to stop early. On Workers the release goes through the
 * execution context's `waitUntil`. Full bulkheads queue up to `maxQueue` requests, FIFO,
 * else answer 503 + `Retry-After`.
 *
 * @example
 * ```ts
 * import { bulkhead } from '@sluice/hono'
 *
 * app.get('/report', bulkhead({ max: 4, maxQueue: 20, queueTimeout: '5s' }), buildReport)
 * ```
 */
export function bulkhead(options?: BulkheadOptions): BulkheadMiddleware {
  return createBulkhead(options, 'bulkhead')
}
