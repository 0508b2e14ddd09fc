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
