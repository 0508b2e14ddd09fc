import { RateLimitError } from '../errors'
import type { ConcurrencyLimiter, Duration } from '../types'
import { describe, readOptions } from '../validation'
import {
  type AsyncMethodWrapper,
  type Method,
  type MethodWrapper,
  named,
  readWait,
  targetName,
} from './decorate'

/** Options of {@link bulkheaded}. */
export interface BulkheadedOptions {
  /** Wait up to this long in the limiter's queue (`maxQueue`) instead of throwing. */
  wait?: Duration
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  )
}

/**
 * Holds one permit of a concurrency limiter for the whole of each call: taken before
 * the call, released exactly once when it settles, on success or failure (for a call
 * returning a promise, when that promise settles). Without `wait` a call finding every
 * permit in flight throws `RateLimitError` (`ERR_SLUICE_LIMITED`) and a synchronous
 * call stays synchronous; with `wait` the call becomes async and queues (FIFO, at most
 * the limiter's `maxQueue`) up to `wait`. A TC39 standard decorator and a plain wrapper.
 *
 * @example
 * ```ts
 * const exports = concurrency({ max: 4, maxQueue: 50 })
 * class Exporter {
 *   @bulkheaded(exports, { wait: '30s' })
 *   async run(job: Job) { await writeArchive(job) }
 * }
 * ```
 */
export function bulkheaded(
  limiter: ConcurrencyLimiter,
  options: BulkheadedOptions & { wait: Duration },
): AsyncMethodWrapper<unknown[]>
export function bulkheaded(
  limiter: ConcurrencyLimiter,
  options?: BulkheadedOptions & { wait?: undefined },
): MethodWrapper<unknown[]>
export function bulkheaded(
  limiter: ConcurrencyLimiter,
  options: BulkheadedOptions = {},
): MethodWrapper<unknown[]> | AsyncMethodWrapper<unknown[]> {
  const decorator = 'bulkheaded'
  if (
    typeof limiter !== 'object' ||
    limiter === null ||
    typeof limiter.tryEnter !== 'function' ||
    typeof limiter.enter !== 'function'
  ) {
    throw new TypeError(
      `${decorator}: "limiter" must be a concurrency limiter, got ${describe(limiter)}`,
    )
  }
  readOptions(decorator, options, ['wait'])
  const waitMs = readWait(decorator, options.wait)

  if (waitMs === undefined) {
    return <This, A extends unknown[], R>(
      target: Method<This, A, R>,
      context?: ClassMethodDecoratorContext<This, Method<This, A, R>>,
    ): Method<This, A, R> => {
      const name = targetName(decorator, target, context)
      return named(function (this: This, ...args: A): R {
        const permit = limiter.tryEnter()
        if (permit === undefined) {
          throw new RateLimitError('ERR_SLUICE_LIMITED', {
            limiter: limiter.name,
            message: `${limiter.name}: all ${limiter.max} permits are in flight`,
          })
        }
        let result: R
        try {
          result = target.apply(this, args)
        } catch (error) {
          permit.release()
          throw error
        }
        if (!isThenable(result)) {
          permit.release()
          return result
        }
        return Promise.resolve(result).finally(() => permit.release()) as R
      }, name)
    }
  }

  const wait = { timeout: waitMs }
  return <This, A extends unknown[], R>(
    target: Method<This, A, R>,
    context?: ClassMethodDecoratorContext<This, Method<This, A, R>>,
  ): Method<This, A, Promise<Awaited<R>>> => {
    const name = targetName(decorator, target, context)
    return named(async function (this: This, ...args: A): Promise<Awaited<R>> {
      const permit = await limiter.enter(wait)
      try {
        return await target.apply(this, args)
      } finally {
        permit.release()
      }
    }, name)
  }
}
