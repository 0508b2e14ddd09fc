import {
  type Decision,
  type RateLimitOptions as HttpRateLimitOptions,
  type MaybePromise,
  type Policy,
  RateLimitEngine,
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
import { defaultIp, defaultIpReady, type GetIp } from './client-address'
import { type ValidateOption, Validations } from './validations'
import type { RateLimitEnv } from './variables'

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares (DESIGN §4), with
 * Hono's `c` as both the request and the response of the callbacks (so
 * `refundWhen: (c) => c.res.status < 400`), plus `getIp`, `onLimited` and `validate`.
 */
export interface RateLimitOptions extends HttpRateLimitOptions<Context, Context> {
  /**
   * Reads the client address that `keys.ip()` (the default key) uses. Default: the
   * socket's peer from `@hono/node-server`'s `getConnInfo`. On Bun, Deno, Workers or
   * behind a proxy, pass your runtime's (see the README).
   */
  getIp?: GetIp
  /**
   * Answers a refused request instead of the default `statusCode` + `message`. Headers and
   * `Retry-After` are already set on `c`; `c.get('rateLimit')` holds the decision.
   * Returning `next()` lets the request through after all.
   */
  onLimited?: (
    c: Context,
    next: Next,
    decision: Decision,
  ) => Response | undefined | MiddlewareResult
  /** One-time configuration warnings (see `ValidateOption`). Default: all on. */
  validate?: ValidateOption
}

/** The middleware `rateLimit()` returns: a Hono middleware with a few handles on its state. */
export type RateLimitMiddleware = MiddlewareHandler<RateLimitEnv> & {
  /** The validated policies, in the order given. */
  readonly policies: readonly Policy[]
  /** Where the per-key state lives. */
  readonly store: Store
  /** Forgets a key's state under this middleware's policies. */
  resetKey(key: string): MaybePromise<void>
}

/** Checks `getIp` and builds the request accessors around it (or the default). */
export function clientAddress(
  factory: string,
  getIp: GetIp | undefined,
  validations: Validations,
): GetIp {
  if (getIp !== undefined) {
    if (typeof getIp !== 'function') {
      throw new TypeError(`${factory}: "getIp" must be a function, got ${typeof getIp}`)
    }
    return getIp
  }
  return (c) => {
    const address = defaultIp(c)
    if (address === undefined) validations.noAddress()
    return address
  }
}

/**
 * Rate-limits requests per key (default: client address) with one or several policies,
 * answering with RateLimit headers and `429` + `Retry-After` once over the limit. Works
 * with `app.use`, on a sub-app, or on one route; the decision is on `c.get('rateLimit')`,
 * typed in the handlers that follow.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono'
 * import { keys, rateLimit } from '@sluice/hono'
 *
 * const app = new Hono()
 * app.use(rateLimit({ limit: 100, window: '1m' }))
 * app.post('/login', rateLimit({ limit: 5, window: '15m', key: keys.ip() }), (c) =>
 *   c.json({ left: c.var.rateLimit?.remaining }),
 * )
 * ```
 */
export function rateLimit(options: RateLimitOptions = {}): RateLimitMiddleware {
  const validations = new Validations('rateLimit', options.validate, options.getIp === undefined)
  const engine = new RateLimitEngine<Context, Context>(
    options,
    honoRequest(clientAddress('rateLimit', options.getIp, validations)),
    honoResponse,
    'rateLimit',
    ['getIp', 'onLimited', 'validate'],
  )
  const { onLimited } = options
  if (onLimited !== undefined && typeof onLimited !== 'function') {
    throw new TypeError(`rateLimit: "onLimited" must be a function, got ${typeof onLimited}`)
  }
  const usesDefaultIp = options.getIp === undefined

  async function rateLimit(c: Context<RateLimitEnv>, next: Next): Promise<Response | undefined> {
    if (usesDefaultIp) {
      validations.check(c)
      const ready = defaultIpReady(c)
      if (ready !== undefined) await ready
    }
    let decision: Decision | undefined
    try {
      const decided = engine.decide(c, c)
      decision = decided instanceof Promise ? await decided : decided
    } catch (error) {
      // A client that left while its request waited has nobody to answer.
      if (isGone(c)) return clientGone()
      throw error
    }
    if (decision === undefined) {
      await next()
      return undefined
    }
    c.set('rateLimit', decision)
    engine.writeHeaders(c, decision)
    if (decision.allowed) {
      await next()
      restoreHeaders(c)
      // The status is final once the handler has answered; a client that already left is
      // never refunded.
      if (engine.refunds && !isGone(c)) engine.settleAfterResponse(c, c, decision)
      return undefined
    }
    honoResponse.setHeader(c, 'Retry-After', engine.retryAfter(decision))
    if (onLimited !== undefined) return answerWith(c, await onLimited(c, next, decision))
    const body = engine.message(c, c)
    return refuse(c, engine.statusCode, body instanceof Promise ? await body : body)
  }

  return Object.assign(rateLimit, {
    policies: engine.policies,
    store: engine.store,
    resetKey: (key: string) => engine.resetKey(key),
  })
}
