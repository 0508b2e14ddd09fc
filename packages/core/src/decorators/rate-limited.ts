import { RateLimitError } from '../errors'
import { waitFor } from '../options'
import type { Duration, RateLimiter } from '../types'
import { describe, readOptions, readPositiveInteger } from '../validation'
import {
  type AsyncMethodWrapper,
  type Method,
  type MethodWrapper,
  named,
  readWait,
  targetName,
} from './decorate'

/** Options of {@link rateLimited}. */
export interface RateLimitedOptions<Args extends unknown[] = unknown[]> {
  /** Wait up to this long for permits instead of throwing (`Infinity`: no bound). */
  wait?: Duration
  /** Permits per call: a number (default 1) or a function of the call's arguments. */
  cost?: number | ((...args: Args) => number)
}

/**
 * Limits calls of a method or function with any rate limiter. Without `wait`, a call
 * over the limit throws `RateLimitError` (`ERR_SLUICE_LIMITED`, with `retryAfterMs`)
 * synchronously and the call stays synchronous; with `wait`, the call becomes async and
 * waits (FIFO) up to `wait` for its permits, then rejects with `ERR_SLUICE_TIMEOUT`.
 * A TC39 standard decorator (no `experimentalDecorators`), and a plain wrapper too.
 *
 * @example
 * ```ts
 * const partner = leakyBucket({ limit: 2, window: '1s' })
 * class PartnerClient {
 *   @rateLimited(partner, { wait: '10s' })
 *   async fetchOrder(id: string) { return fetch(`https://partner.example/orders/${id}`) }
 * }
 * const search = rateLimited(tokenBucket({ limit: 10 }))((q: string) => index.search(q))
 * ```
 */
export function rateLimited<Args extends unknown[] = unknown[]>(
  limiter: RateLimiter,
  options: RateLimitedOptions<Args> & { wait: Duration },
): AsyncMethodWrapper<Args>
export function rateLimited<Args extends unknown[] = unknown[]>(
  limiter: RateLimiter,
  options?: RateLimitedOptions<Args> & { wait?: undefined },
): MethodWrapper<Args>
export function rateLimited<Args extends unknown[] = unknown[]>(
  limiter: RateLimiter,
  options: RateLimitedOptions<Args> = {},
): MethodWrapper<Args> | AsyncMethodWrapper<Args> {
  const decorator = 'rateLimited'
  if (
    typeof limiter !== 'object' ||
    limiter === null ||
    typeof limiter.tryAcquire !== 'function' ||
    typeof limiter.acquire !== 'function'
  ) {
    throw new TypeError(`${decorator}: "limiter" must be a rate limiter, got ${describe(limiter)}`)
  }
  readOptions(decorator, options, ['wait', 'cost'])
  const { cost = 1 } = options
  if (typeof cost !== 'function') readPositiveInteger(decorator, 'cost', cost)
  const permitsFor = (args: Args): number => (typeof cost === 'function' ? cost(...args) : cost)
  const waitMs = readWait(decorator, options.wait)

  if (waitMs === undefined) {
    return <This, A extends Args, R>(
      target: Method<This, A, R>,
      context?: ClassMethodDecoratorContext<This, Method<This, A, R>>,
    ): Method<This, A, R> => {
      const name = targetName(decorator, target, context)
      return named(function (this: This, ...args: A): R {
        const permits = permitsFor(args)
        if (!limiter.tryAcquire(permits)) {
          throw new RateLimitError('ERR_SLUICE_LIMITED', {
            limiter: limiter.name,
            retryAfterMs: limiter.retryAfterMs(permits),
          })
        }
        return target.apply(this, args)
      }, name)
    }
  }

  // Warned about as "wait" already: acquire must not warn about it again as "timeout".
  const wait = waitFor(waitMs)
  return <This, A extends Args, R>(
    target: Method<This, A, R>,
    context?: ClassMethodDecoratorContext<This, Method<This, A, R>>,
  ): Method<This, A, Promise<Awaited<R>>> => {
    const name = targetName(decorator, target, context)
    return named(async function (this: This, ...args: A): Promise<Awaited<R>> {
      await limiter.acquire(permitsFor(args), wait)
      return await target.apply(this, args)
    }, name)
  }
}
