import { methodDecorator } from '@sluice/http/adapter'
import type { Next, ParameterizedContext } from 'koa'
import { type BulkheadOptions, createBulkhead } from './bulkhead'
import { type RateLimitOptions, rateLimit } from './rate-limit'

/**
 * A class method Koa calls as middleware or route handler. Its `ctx` may be any Koa
 * context type (`Context`, `@koa/router`'s `RouterContext`, one with a typed state).
 */
export type HandlerMethod<This> = (
  this: This,
  // biome-ignore lint/suspicious/noExplicitAny: any state and context, so every Koa context type fits.
  ctx: ParameterizedContext<any, any, any>,
  next: Next,
) => unknown

/**
 * A TC39 method decorator: rate-limits a class-based Koa handler `(ctx, next)` exactly
 * like `rateLimit(options)` in front of it would. One limiter per decorated method,
 * shared by all instances. The decorated method returns a promise of its completion.
 *
 * @example
 * ```ts
 * class Users {
 *   @RateLimit({ limit: 10, window: '1m' })
 *   async create(ctx: Context) {
 *     ctx.status = 201
 *     ctx.body = { remaining: ctx.state.rateLimit?.remaining }
 *   }
 * }
 * const users = new Users()
 * router.post('/users', (ctx, next) => users.create(ctx, next))
 * ```
 */
export function RateLimit(options?: RateLimitOptions) {
  const middleware = rateLimit(options)
  return methodDecorator<HandlerMethod<unknown>>(
    'RateLimit',
    (method, self) => (ctx, next) => middleware(ctx, async () => method.call(self, ctx, next)),
  )
}

/**
 * A TC39 method decorator: runs a class-based Koa handler inside a bulkhead, like
 * `bulkhead(options)` in front of it. The slot is released exactly once: when the
 * response finishes or closes (a streamed `ctx.body` holds it until the stream ends), or
 * at once when the method throws or rejects.
 *
 * @example
 * ```ts
 * class Reports {
 *   @Bulkhead({ max: 2, maxQueue: 10 })
 *   async build(ctx: Context) {
 *     ctx.body = await renderReport(ctx.query)
 *   }
 * }
 * ```
 */
export function Bulkhead(options?: BulkheadOptions) {
  const middleware = createBulkhead(options, 'Bulkhead')
  return methodDecorator<HandlerMethod<unknown>>(
    'Bulkhead',
    (method, self) => (ctx, next) => middleware(ctx, async () => method.call(self, ctx, next)),
  )
}
