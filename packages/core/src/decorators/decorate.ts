import type { Duration } from '../types'
import { describe, readDuration } from '../validation'
import { warnIfBareMilliseconds } from '../warnings'

/** A function or method as the decorators see it. */
export type Method<This, Args extends unknown[], R> = (this: This, ...args: Args) => R

/**
 * A TC39 standard method decorator that is also a plain function wrapper:
 * `@rateLimited(limiter) method() {}` or `rateLimited(limiter)(fn)`.
 */
export type MethodWrapper<Args extends unknown[]> = <This, A extends Args, R>(
  target: Method<This, A, R>,
  context?: ClassMethodDecoratorContext<This, Method<This, A, R>>,
) => Method<This, A, R>

/** Like {@link MethodWrapper}, for wrappers that make the call asynchronous. */
export type AsyncMethodWrapper<Args extends unknown[]> = <This, A extends Args, R>(
  target: Method<This, A, R>,
  context?: ClassMethodDecoratorContext<This, Method<This, A, R>>,
) => Method<This, A, Promise<Awaited<R>>>

/** Checks what a decorator was applied to and returns the name the wrapper should carry. */
export function targetName(
  decorator: string,
  target: unknown,
  context: { kind: string; name: string | symbol } | undefined,
): string {
  if (context !== undefined && context.kind !== 'method') {
    throw new TypeError(`${decorator}: can only decorate methods, not a ${context.kind}`)
  }
  if (typeof target !== 'function') {
    throw new TypeError(`${decorator}: can only wrap a function, got ${describe(target)}`)
  }
  const name = context === undefined ? target.name : context.name
  return typeof name === 'symbol' ? (name.description ?? '') : name
}

/** Gives the wrapper the wrapped function's name, so stack traces still say what ran. */
export function named<F extends Function>(wrapper: F, name: string): F {
  Object.defineProperty(wrapper, 'name', { value: name, configurable: true })
  return wrapper
}

/** `wait` as milliseconds; `Infinity` waits without bound. */
export function readWait(decorator: string, wait: Duration | undefined): number | undefined {
  if (wait === undefined) return undefined
  if (wait === Number.POSITIVE_INFINITY) return wait
  const ms = readDuration(decorator, 'wait', wait)
  warnIfBareMilliseconds(decorator, 'wait', wait)
  return ms
}
