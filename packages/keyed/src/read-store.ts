import { typeError } from '@sluice/core/validation'
import type { Store } from './store'

/** Every method of the Store protocol: what a store given as an option must have. */
const STORE_METHODS = [
  'take',
  'refund',
  'force',
  'block',
  'release',
  'get',
  'reset',
  'resetAll',
] as const

/**
 * Checks a store given as an option (a keyed limiter's `store`, a remote store's `local`):
 * an object with every method of the Store protocol.
 *
 * @example
 * ```ts
 * readStore('keyedLimiter', 'store', {}) // TypeError: keyedLimiter: "store" must be a store (take, refund, ...), got an object
 * ```
 */
export function readStore(factory: string, option: string, value: unknown): Store {
  const store = value as Partial<Record<keyof Store, unknown>> | null
  if (
    typeof store !== 'object' ||
    store === null ||
    STORE_METHODS.some((method) => typeof store[method] !== 'function')
  ) {
    throw typeError(factory, option, `must be a store (${STORE_METHODS.join(', ')})`, value)
  }
  return store as Store
}
