import { readFunction } from '@sluice/core/validation'
import type { Decision } from '@sluice/http'
import {
  BulkheadEngine,
  type BulkheadHandles,
  type BulkheadOptions as HttpBulkheadOptions,
  outcomeUnlessGone,
  withBulkheadHandles,
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
import { defaultIpReady, type GetIp } from './client-address'
import { clientAddress } from './rate-limit'
import { type ValidateOption, Validations } from './validations'

/**
 * Options of {@link bulkhead}: the options every sluice adapter shares, with Hono's `c` as
 * the request and response of the callbacks, plus `getIp` (for a key by client address),
 * `onLimited` and `validate`.
 */
export interface BulkheadOptions extends HttpBulkheadOptions<Context, Context> {
  /** Reads the client address, should `key` use `keys.ip()`. Default as in `rateLimit()`. */
  getIp?: GetIp
  /** Answers a refused request instead of the default `statusCode` + `message`. */
  onLimited?: (
    c: Context,
    next: Next,
    decision: Decision,
  ) => Response | undefined | MiddlewareResult
  /** One-time configuration warnings (see `ValidateOption`). Default: all on. */
  validate?: ValidateOption
}

/** The middleware `bulkhead()` returns. */
export type BulkheadMiddleware = MiddlewareHandler & BulkheadHandles

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
  const onLimited = readFunction(factory, 'onLimited', options.onLimited)
  const usesDefaultIp = options.getIp === undefined

  async function bulkhead(c: Context, next: Next): Promise<Response | undefined> {
    if (usesDefaultIp) {
      const ready = defaultIpReady(c)
      if (ready !== undefined) await ready
    }
    const outcome = await outcomeUnlessGone(engine.admit(c, c), () => isGone(c))
    if (outcome === undefined) return clientGone()
    return answer(c, next, outcome, onLimited, true)
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
  return withBulkheadHandles(middleware, engine)
}
