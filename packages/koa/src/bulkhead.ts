import {
  type BulkheadDecision,
  BulkheadEngine,
  type BulkheadOptions as HttpBulkheadOptions,
  type Policy,
  type Store,
} from '@sluice/http'
import type { Context, Middleware, Next } from 'koa'
import { isGone, koaRequest, koaResponse, refuse } from './accessors'

/**
 * Options of {@link bulkhead}: the options every sluice adapter shares (DESIGN §4), with
 * Koa's `ctx` as the request and response of the callbacks, plus `onLimited`.
 */
export interface BulkheadOptions extends HttpBulkheadOptions<Context, Context> {
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: (ctx: Context, next: Next, decision: BulkheadDecision) => unknown
}

/** The middleware `bulkhead()` returns. */
export interface BulkheadMiddleware extends Middleware {
  /** The bulkhead's concurrency policy. */
  readonly policies: readonly Policy[]
  /** Where slots are counted. */
  readonly store: Store
  /** Requests waiting for a slot under `key` (default: the global key). */
  queued(key?: string): number
}

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
  const { onLimited } = options
  if (onLimited !== undefined && typeof onLimited !== 'function') {
    throw new TypeError(`${factory}: "onLimited" must be a function, got ${typeof onLimited}`)
  }

  async function bulkhead(ctx: Context, next: Next): Promise<void> {
    let decision: BulkheadDecision
    try {
      const entered = engine.enter(ctx, ctx)
      decision = entered instanceof Promise ? await entered : entered
    } catch (error) {
      // A client that left while queued has nobody to answer; it already left the queue.
      if (isGone(ctx)) return
      throw error
    }
    engine.writeHeaders(ctx, decision)
    if (!decision.allowed) {
      ctx.set('Retry-After', engine.retryAfter())
      if (onLimited !== undefined) {
        await onLimited(ctx, next, decision)
        return
      }
      const body = engine.message(ctx, ctx)
      refuse(ctx, engine.statusCode, body instanceof Promise ? await body : body)
      return
    }
    const { release } = decision
    // Koa sends the body after the middleware chain has returned (a stream is piped
    // later), so the slot is tied to the response: 'finish' once it is fully handed to
    // the OS, 'close' if the client went away first. release() counts only once.
    ctx.res.once('finish', release)
    ctx.res.once('close', release)
    if (isGone(ctx)) {
      release()
      return
    }
    try {
      await next()
    } catch (error) {
      // Free the slot before Koa (or an error middleware) answers: the work has stopped.
      release()
      throw error
    }
  }

  return { engine, middleware: bulkhead }
}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken before the downstream middleware and released exactly once: when the
 * response has finished (a streamed `ctx.body` holds it until the stream ends), when the
 * client goes away, or when downstream throws. Full bulkheads queue up to `maxQueue`
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
export function bulkhead(options: BulkheadOptions = {}): BulkheadMiddleware {
  const { engine, middleware } = createBulkhead(options, 'bulkhead')
  return Object.assign(middleware, {
    policies: engine.policies,
    store: engine.store,
    queued: (key?: string) => engine.queued(key),
  })
}
