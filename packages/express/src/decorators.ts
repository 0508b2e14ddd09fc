import { methodDecorator } from '@sluice/http/adapter'
import type { NextFunction, Request, Response } from 'express'
import { type BulkheadOptions, createBulkhead } from './bulkhead'
import { type RateLimitOptions, rateLimit } from './rate-limit'

/** A class method Express calls as a route handler. */
export type HandlerMethod<This> = (
  this: This,
  req: Request,
  res: Response,
  next: NextFunction,
) => unknown

/** Whether a `next(value)` call is a failure (not Express's 'route'/'router' jumps). */
const isError = (value: unknown) => value !== undefined && value !== 'route' && value !== 'router'

/**
 * Calls the original method and routes its failure to `next(err)` after `onError`: the
 * wrapper returns nothing to Express, so a rejected promise would otherwise be lost.
 */
function invoke<This>(
  method: HandlerMethod<This>,
  self: This,
  req: Request,
  res: Response,
  next: NextFunction,
  onError: () => void,
): void {
  const fail = (error: unknown) => {
    onError()
    next(error)
  }
  const guardedNext: NextFunction = (value?: unknown) => {
    if (isError(value)) onError()
    next(value as 'route')
  }
  try {
    const result = method.call(self, req, res, guardedNext)
    if (result instanceof Promise) result.catch(fail)
  } catch (error) {
    fail(error)
  }
}

const nothing = () => {}

/**
 * A TC39 method decorator: rate-limits a class-based Express handler
 * `(req, res, next)` exactly like `rateLimit(options)` in front of it would. One limiter
 * per decorated method, shared by all instances.
 *
 * @example
 * ```ts
 * class Users {
 *   @RateLimit({ limit: 10, window: '1m' })
 *   async create(req: Request, res: Response) {
 *     res.status(201).json({ remaining: req.rateLimit?.remaining })
 *   }
 * }
 * const users = new Users()
 * app.post('/users', (req, res, next) => users.create(req, res, next))
 * ```
 */
export function RateLimit(options: RateLimitOptions = {}) {
  const middleware = rateLimit(options)
  // The replacement answers through res/next and returns nothing: Express ignores a
  // handler's result once errors are routed to next(), which invoke() does.
  return methodDecorator<HandlerMethod<unknown>>(
    'RateLimit',
    (method, self) => (req, res, next) => {
      middleware(req, res, (value?: unknown) => {
        if (value !== undefined) next(value as 'route')
        else invoke(method, self, req, res, next, nothing)
      })
    },
  )
}

/**
 * A TC39 method decorator: runs a class-based Express handler inside a bulkhead, like
 * `bulkhead(options)` in front of it. The slot is released exactly once: when the
 * response finishes or closes, or at once when the method throws, rejects or calls
 * `next(err)`.
 *
 * @example
 * ```ts
 * class Reports {
 *   @Bulkhead({ max: 2, maxQueue: 10 })
 *   async build(req: Request, res: Response) {
 *     res.json(await renderReport(req.query))
 *   }
 * }
 * ```
 */
export function Bulkhead(options: BulkheadOptions = {}) {
  const { run } = createBulkhead(options, 'Bulkhead')
  return methodDecorator<HandlerMethod<unknown>>('Bulkhead', (method, self) => (req, res, next) => {
    run(req, res, next, (release) => invoke(method, self, req, res, next, release))
  })
}
