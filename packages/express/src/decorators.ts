import { methodDecorator } from '@sluice/http/adapter'
import type { NextFunction, Request, Response } from 'express'
import { type BulkheadOptions, createBulkhead } from './bulkhead'
import { createRateLimit, type RateLimitOptions } from './rate-limit'

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
 * Runs the original method; the promise it returns is its work: settled when the method
 * returns (or its promise settles), rejected when it throws, rejects or calls `next(err)`.
 * A failure is the caller's to hand to `next`, once the middleware has seen it (a slot
 * is freed before the error handler answers). A `next(err)` that comes after the method
 * returned goes straight to Express.
 */
function invoke<This>(
  method: HandlerMethod<This>,
  self: This,
  req: Request,
  res: Response,
  next: NextFunction,
): Promise<void> {
  let settled = false
  return new Promise<void>((resolve, reject) => {
    const settle = (error?: unknown) => {
      settled = true
      if (error === undefined) resolve()
      else reject(error)
    }
    const guardedNext: NextFunction = (value?: unknown) => {
      if (!isError(value)) next(value as 'route')
      if (settled) {
        if (isError(value)) next(value)
        return
      }
      settle(isError(value) ? value : undefined)
    }
    try {
      const result = method.call(self, req, res, guardedNext)
      if (result instanceof Promise)
        result.then(
          () => settle(),
          (error: unknown) => settle(error ?? new Error('rejected')),
        )
      else settle()
    } catch (error) {
      settle(error)
    }
  })
}

type Run = (req: Request, res: Response, next: NextFunction) => unknown

/** The method run behind a middleware, with what fails handed to Express. */
function behind<This>(run: Run, method: HandlerMethod<This>, self: This) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const answered = run(req, res, (value?: unknown) =>
      value === undefined ? invoke(method, self, req, res, next) : next(value as 'route'),
    )
    if (answered instanceof Promise) answered.then(undefined, next)
  }
}

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
export function RateLimit(options?: RateLimitOptions) {
  const { run } = createRateLimit(options, 'RateLimit')
  return methodDecorator<HandlerMethod<unknown>>('RateLimit', (method, self) =>
    behind(run, method, self),
  )
}

/**
 * A TC39 method decorator: runs a class-based Express handler inside a bulkhead, like
 * `bulkhead(options)` in front of it. The slot is held until the method's work is over
 * (it returned, or its promise settled) and its response too, and freed at once when the
 * method throws, rejects or calls `next(err)`, before the error handler answers.
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
export function Bulkhead(options?: BulkheadOptions) {
  const { run } = createBulkhead(options, 'Bulkhead')
  return methodDecorator<HandlerMethod<unknown>>('Bulkhead', (method, self) =>
    behind(run, method, self),
  )
}
