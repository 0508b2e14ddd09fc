/** A value or a promise of it: the memory store answers synchronously, Redis does not. */
export type MaybePromise<T> = T | PromiseLike<T>

/**
 * True for a promise or any other thenable (a store may return one). The engines stay
 * synchronous while every step answers synchronously (the memory store, built-in keys),
 * so the common path allocates no promise and takes no extra turn of the event loop.
 * Every package tests for a pending value with this one function.
 *
 * @example
 * ```ts
 * const taken = store.take(key, policies, 1)
 * if (isPromiseLike(taken)) return Promise.resolve(taken).then(decide)
 * ```
 */
export function isPromiseLike<T>(value: MaybePromise<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function'
}

/**
 * Runs `apply` on a value now, or once a promise of it resolves, routing every failure
 * (a rejection, or a throw from `apply` itself) to `fail`. Adapters answer through this,
 * so a throwing `onLimited` after an asynchronous decision reaches the framework's error
 * handling instead of becoming an unhandled rejection that kills the process.
 *
 * @example
 * ```ts
 * whenSettled(engine.admit(req, res), (outcome) => answer(outcome), (error) => next(error))
 * ```
 */
export function whenSettled<T>(
  value: MaybePromise<T>,
  apply: (value: T) => void,
  fail: (error: unknown) => void,
): void {
  if (isPromiseLike(value)) {
    Promise.resolve(value).then(apply).then(undefined, fail)
    return
  }
  try {
    apply(value)
  } catch (error) {
    fail(error)
  }
}

/**
 * Runs `next` on a value, or on what a promise resolves to (not named `then`: a module
 * exporting `then` would make its namespace a thenable).
 */
export function andThen<T, R>(
  value: MaybePromise<T>,
  next: (value: T) => MaybePromise<R>,
): MaybePromise<R> {
  if (isPromiseLike(value)) return Promise.resolve(value).then(next)
  return next(value as T)
}
