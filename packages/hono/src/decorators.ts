import { methodDecorator } from '@sluice/http/adapter'
import type { Context, Next } from 'hono'
import type { MiddlewareResult } from './accessors'
import { type BulkheadOptions, createBulkhead } from './bulkhead'
import { createRateLimit, type RateLimitOptions } from './rate-limit'

/**
 * An async class method Hono calls as a handler `(c)` or middleware `(c, next)`. It is
 * async because the decorated method waits for a permit or a slot first.
 */
export type HandlerMethod<This> = (
  this: This,
  // biome-ignore lint/suspicious/noExplicitAny: any Env, path and input, so typed routes' contexts fit.
  c: Context<any, any, any>,
  next: Next,
) => MiddlewareResult

type Middleware = (c: Context, next: Next) => MiddlewareResult

/**
 * Runs `method` behind `middleware`: the method's response becomes `c.res`, so the
 * middleware sees (and, for a bulkhead, wraps) it as it would a route handler's.
 */
function behind<This>(middleware: Middleware, method: HandlerMethod<This>, self: This) {
  return async (c: Context, next: Next): Promise<Response | undefined> => {
    const refused = await middleware(c, async () => {
      const response = await method.call(self, c, next)
      if (response) c.res = response
    })
    if (refused !== undefined) return refused
    return c.finalized ? c.res : undefined
  }
}

/**
 * A TC39 method decorator: rate-limits a class-based Hono handler exactly like
 * `rateLimit(options)` in front of it would. One limiter per decorated method, shared by
 * all instances.
 *
 * @example
 * ```ts
 * class Users {
 *   @RateLimit({ limit: 10, window: '1m' })
 *   async create(c: Context) {
 *     return c.json({ remaining: c.get('rateLimit')?.remaining }, 201)
 *   }
 * }
 * const users = new Users()
 * app.post('/users', (c) => users.create(c))
 * ```
 */
export function RateLimit(options?: RateLimitOptions) {
  const middleware = createRateLimit(options, 'RateLimit') as unknown as Middleware
  return methodDecorator<HandlerMethod<unknown>>('RateLimit', (method, self) =>
    behind(middleware, method, self),
  )
}

/**
 * A TC39 method decorator: runs a class-based Hono handler inside a bulkhead, like
 * `bulkhead(options)` in front of it. The slot is released exactly once: when the
 * response body has been sent or cancelled, when the client goes away, or at once when
 * the method throws.
 *
 * @example
 * ```ts
 * class Reports {
 *   @Bulkhead({ max: 2, maxQueue: 10 })
 *   async build(c: Context) {
 *     return c.json(await renderReport(c.req.query()))
 *   }
 * }
 * ```
 */
export function Bulkhead(options?: BulkheadOptions) {
  const middleware = createBulkhead(options, 'Bulkhead')
  return methodDecorator<HandlerMethod<unknown>>('Bulkhead', (method, self) =>
    behind(middleware, method, self),
  )
}
