import {
  type BulkheadDecision,
  BulkheadEngine,
  type BulkheadOptions as HttpBulkheadOptions,
  type Policy,
  type Store,
} from '@sluice/http'
import type { Context, MiddlewareHandler, Next } from 'hono'
import {
  answerWith,
  clientGone,
  honoRequest,
  honoResponse,
  isGone,
  type MiddlewareResult,
  refuse,
  restoreHeaders,
} from './accessors'
import { defaultIpReady, type GetIp, onNodeClose } from './client-address'
import { holdUntilSent } from './hold-body'
import { clientAddress } from './rate-limit'
import { type ValidateOption, Validations } from './validations'

/**
 * Options of {@link bulkhead}: the options every sluice adapter shares (DESIGN §4), with
 * Hono's `c` as the request and response of the callbacks, plus `getIp` (for a key by
 * client address), `onLimited` and `validate`.
 */
export interface BulkheadOptions extends HttpBulkheadOptions<Context, Context> {
  /** Reads the client address, should `key` use `keys.ip()`. Default as in `rateLimit()`. */
  getIp?: GetIp
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: (
    c: Context,
    next: Next,
    decision: BulkheadDecision,
  ) => Response | undefined | MiddlewareResult
  /** One-time configuration warnings (see `ValidateOption`). Default: all on. */
  validate?: ValidateOption
}

/** The middleware `bulkhead()` returns. */
export type BulkheadMiddleware = MiddlewareHandler & {
  /** The bulkhead's concurrency policy. */
  readonly policies: readonly Policy[]
  /** Where slots are counted. */
  readonly store: Store
  /** Requests waiting for a slot under `key` (default: the global key). */
  queued(key?: string): number
}

type Bulkheaded = (c: Context, next: Next) => Promise<Response | undefined>

/** Builds the engine and the middleware behind `bulkhead()` and `@Bulkhead()`. */
export function createBulkhead(
  options: BulkheadOptions,
  factory: string,
): { engine: BulkheadEngine<Context, Context>; middleware: Bulkheaded } {
  const validations = new Validations(factory, options.validate, options.getIp === undefined)
  const engine = new BulkheadEngine<Context, Context>(
    options,
    honoRequest(clientAddress(factory, options.getIp, validations)),
    honoResponse,
    factory,
    ['getIp', 'onLimited', 'validate'],
  )
  const { onLimited } = options
  if (onLimited !== undefined && typeof onLimited !== 'function') {
    throw new TypeError(`${factory}: "onLimited" must be a function, got ${typeof onLimited}`)
  }
  const usesDefaultIp = options.getIp === undefined

  async function bulkhead(c: Context, next: Next): Promise<Response | undefined> {
    if (usesDefaultIp) {
      const ready = defaultIpReady(c)
      if (ready !== undefined) await ready
    }
    let decision: BulkheadDecision
    try {
      const entered = engine.enter(c, c)
      decision = entered instanceof Promise ? await entered : entered
    } catch (error) {
      // A client that left while queued has nobody to answer; it already left the queue.
      if (isGone(c)) return clientGone()
      throw error
    }
    engine.writeHeaders(c, decision)
    if (!decision.allowed) {
      honoResponse.setHeader(c, 'Retry-After', engine.retryAfter())
      if (onLimited !== undefined) return answerWith(c, await onLimited(c, next, decision))
      const body = engine.message(c, c)
      return refuse(c, engine.statusCode, body instanceof Promise ? await body : body)
    }
    const { release } = decision
    // Under @hono/node-server the Node response is at hand: its 'close' comes once the
    // response has been sent (a stream to its end) or abandoned (the client left, even
    // while the handler still runs), and even if a middleware further out replaced the
    // body. Elsewhere the runtime aborts the request's signal when its client goes away.
    // release() counts only once.
    const closes = onNodeClose(c, release)
    if (!closes) c.req.raw.signal.addEventListener('abort', release, { once: true })
    if (isGone(c)) {
      release()
      return clientGone()
    }
    try {
      await next()
    } catch (error) {
      release()
      throw error
    }
    // Hono answered a thrown error with its onError response: the work has stopped.
    if (c.error !== undefined) {
      release()
      return undefined
    }
    restoreHeaders(c)
    // Elsewhere, `await next()` returns once the handler has a Response, before a streamed
    // body is sent: the slot goes with the body until it has been read to the end or
    // cancelled. (Under Node, 'close' does this without re-wrapping every response.)
    if (!closes) c.res = holdUntilSent(c.res, release)
    return undefined
  }

  return { engine, middleware: bulkhead }
}

/**
 * Limits how many requests are handled at once (per key; default one bulkhead for all).
 * A slot is taken before the handler and released exactly once: when the response body
 * has been sent (a stream holds it until it ends or is cancelled), when the client goes
 * away, or when the handler throws. Full bulkheads queue up to `maxQueue` requests, FIFO,
 * else answer 503 + `Retry-After`.
 *
 * @example
 * ```ts
 * import { bulkhead } from '@sluice/hono'
 *
 * app.get('/report', bulkhead({ max: 4, maxQueue: 20, queueTimeout: '5s' }), buildReport)
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
