import { readFunction } from '@sluice/core/validation'
import type { Decision } from '@sluice/http'
import {
  type RateLimitOptions as HttpRateLimitOptions,
  outcomeUnlessGone,
  RateLimitEngine,
  type RateLimitHandles,
  withRateLimitHandles,
} from '@sluice/http/adapter'
import type { Context, MiddlewareHandler, Next } from 'hono'
import {
  answer,
  clientGone,
  honoRequest,
  honoResponse,
  isGone,
  type MiddlewareResult,
} from './accessors'
import { defaultIp, defaultIpReady, type GetIp } from './client-address'
import { type ValidateOption, Validations } from './validations'
import type { RateLimitEnv } from './variables'

/**
 * Options of {@link rateLimit}: the options every sluice adapter shares, with Hono's `c`
 * as both the request and the response of the callbacks (so
 * `refundWhen: (c) => c.res.status < 400`), plus `getIp`, `onLimited` and `validate`.
 */
export interface RateLimitOptions extends HttpRateLimitOptions<Context, Context> {
  /**
   * Reads the client address that `keys.ip()` (the default key) uses. Default: the peer
   * the runtime reports: `@hono/node-server`'s socket, Bun's `server.requestIP()`, Deno's
   * `remoteAddr`, or the `cf-connecting-ip` header on Cloudflare Workers. Behind a reverse
   * proxy, or on another runtime, pass your own (see the README).
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
export type RateLimitMiddleware = MiddlewareHandler<RateLimitEnv> & RateLimitHandles

/** Checks `getIp` and returns it, or the default reader that warns when it finds nothing. */
export function clientAddress(
  factory: string,
  getIp: GetIp | undefined,
  validations: Validations,
): GetIp {
  const given = readFunction(factory, 'getIp', getIp)
  if (given !== undefined) return given
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
  const onLimited = readFunction('rateLimit', 'onLimited', options.onLimited)
  const usesDefaultIp = options.getIp === undefined

  async function rateLimit(c: Context<RateLimitEnv>, next: Next): Promise<Response | undefined> {
    if (usesDefaultIp) {
      validations.check(c)
      const ready = defaultIpReady(c)
      if (ready !== undefined) await ready
    }
    const outcome = await outcomeUnlessGone(engine.admit(c, c), () => isGone(c))
    if (outcome === undefined) return clientGone()
    if (outcome.decision !== undefined) c.set('rateLimit', outcome.decision)
    return answer(c, next, outcome, onLimited, false)
  }

  return withRateLimitHandles(rateLimit, engine)
}
