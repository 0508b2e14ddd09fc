import { RateLimitError } from '../errors'
import { waitFor } from '../options'
import { partitionName, readPriority } from '../priority/priority'
import type { ConcurrencyLimiter, Duration, Priority } from '../types'
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
  /**
   * The calls' priority, or a function of each call's arguments that gives it (see the
   * limiter's `enter`): under overload the lowest is refused first. Default `'default'`.
   */
  priority?: Priority | ((...args: never[]) => Priority)
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
 * the limiter's `maxQueue`) up to `wait`. With `priority`, each call enters at its
 * priority and a refusal names its partition. A TC39 standard decorator and a plain wrapper.
 *
 * @example
 * ```ts
 * const exports = concurrency({ max: 4, maxQueue: 50, partitions: { critical: 0.5 } })
 * class Exporter {
 *   @bulkheaded(exports, { wait: '30s', priority: (job: Job) => (job.paid ? 'critical' : 'sheddable') })
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
  readOptions(decorator, options, ['wait', 'priority'])
  const waitMs = readWait(decorator, options.wait)
  const priorityOf = readPriorityOption(decorator, options.priority)

  if (waitMs === undefined) {
    return <This, A extends unknown[], R>(
      target: Method<This, A, R>,
      context?: ClassMethodDecoratorContext<This, Method<This, A, R>>,
    ): Method<This, A, R> => {
      const name = targetName(decorator, target, context)
      return named(function (this: This, ...args: A): R {
        const priority = priorityOf?.(args)
        const permit = limiter.tryEnter(priority === undefined ? undefined : { priority })
        if (permit === undefined) {
          const partition = priority === undefined ? undefined : partitionName(priority)
          throw new RateLimitError('ERR_SLUICE_LIMITED', {
            limiter: limiter.name,
            ...(partition === undefined ? {} : { partition }),
            message: `${limiter.name}: all ${limiter.max} permits are in flight${partition === undefined ? '' : ` (partition "${partition}")`}`,
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

  // Warned about as "wait" already: acquire must not warn about it again as "timeout".
  const wait = waitFor(waitMs)
  return <This, A extends unknown[], R>(
    target: Method<This, A, R>,
    context?: ClassMethodDecoratorContext<This, Method<This, A, R>>,
  ): Method<This, A, Promise<Awaited<R>>> => {
    const name = targetName(decorator, target, context)
    return named(async function (this: This, ...args: A): Promise<Awaited<R>> {
      const priority = priorityOf?.(args)
      const permit = await limiter.enter(priority === undefined ? wait : { ...wait, priority })
      try {
        return await target.apply(this, args)
      } finally {
        permit.release()
      }
    }, name)
  }
}

/**
 * `priority` as a function of a call's arguments giving a number: a fixed priority is
 * checked once, a function's answer on each call.
 */
function readPriorityOption(
  decorator: string,
  priority: BulkheadedOptions['priority'],
): ((args: unknown[]) => number) | undefined {
  if (priority === undefined) return undefined
  if (typeof priority === 'function') {
    const of = priority as (...args: unknown[]) => Priority
    return (args) => readPriority(decorator, of(...args))
  }
  const fixed = readPriority(decorator, priority)
  return () => fixed
}
