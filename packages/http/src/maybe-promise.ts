import type { MaybePromise } from './store'

/**
 * True for a promise (or any thenable). The engines stay synchronous while every step
 * answers synchronously (the memory store, built-in keys), so the common path allocates
 * no promise and takes no extra turn of the event loop.
 */
export function isPromiseLike<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function'
}
