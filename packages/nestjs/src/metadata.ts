import type { Reflector } from '@nestjs/core'
import { BULKHEAD_METADATA, RATE_LIMIT_METADATA, SKIP_RATE_LIMIT_METADATA } from './decorators'
import { type Options, overlay } from './merge'
import type { BulkheadOptions, RateLimitOptions } from './options'

/** What the decorators set for one handler of one class. */
export interface HandlerMetadata {
  readonly skip: boolean | readonly string[] | undefined
  /** The controller's `@RateLimit()` with the handler's over it: one object per handler. */
  readonly own: RateLimitOptions | undefined
  readonly bulkhead: BulkheadOptions | undefined
}

type Cache = WeakMap<object, WeakMap<object, HandlerMetadata>>

/**
 * Decorator metadata by reflector, handler and class: fixed once the app is built, read
 * at bootstrap (to build each handler's limiters) and on every request, which must find
 * the very same `own` object (the service's limiters are kept by it).
 */
const caches = new WeakMap<Reflector, Cache>()

/** What the decorators set for `handler` of `target`, read once per handler and class. */
export function handlerMetadata(
  reflector: Reflector,
  handler: object,
  target: object,
): HandlerMetadata {
  let cache = caches.get(reflector)
  if (cache === undefined) {
    cache = new WeakMap()
    caches.set(reflector, cache)
  }
  let byClass = cache.get(handler)
  if (byClass === undefined) {
    byClass = new WeakMap()
    cache.set(handler, byClass)
  }
  let found = byClass.get(target)
  if (found === undefined) {
    const targets = [handler, target] as never[]
    found = {
      skip: reflector.getAllAndOverride(SKIP_RATE_LIMIT_METADATA, targets),
      own: overlay(
        reflector.get<Options | undefined>(RATE_LIMIT_METADATA, target as never),
        reflector.get<Options | undefined>(RATE_LIMIT_METADATA, handler as never),
      ) as RateLimitOptions | undefined,
      bulkhead: reflector.getAllAndOverride(BULKHEAD_METADATA, targets),
    }
    byClass.set(target, found)
  }
  return found
}
