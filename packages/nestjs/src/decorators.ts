import { SetMetadata } from '@nestjs/common'
import { memoryStore } from '@sluice/http'
import { BulkheadEngine, RateLimitEngine } from '@sluice/http/adapter'
import { nestRequest, nestResponse } from './accessors'
import { type Options, stack } from './merge'
import type { BulkheadOptions, RateLimitOptions } from './options'

/** Metadata keys of the decorators, read by `SluiceGuard` through Nest's `Reflector`. */
export const RATE_LIMIT_METADATA = 'sluice:rate-limit'
export const SKIP_RATE_LIMIT_METADATA = 'sluice:skip-rate-limit'
export const BULKHEAD_METADATA = 'sluice:bulkhead'

/** A decorator that applies to a controller (its handlers' default) or one handler. */
export type ClassOrMethodDecorator = ClassDecorator & MethodDecorator

/**
 * Sets the rate limit of a controller (the default of its handlers) or of one handler, on
 * top of `SluiceModule.forRoot()`'s options: a policy with no `name`, or the name of the
 * module's policy, replaces that policy here; a policy of another name is checked as well
 * (atomically, with the module's). A handler's policy replaces its controller's of the
 * same name (or the controller's unnamed one, if it has none) and adds to them otherwise.
 * Options other than the policies (`key`, `cost`, `headers`, `dryRun`, …) override the
 * module's (and the controller's) one by one; the store is the module's unless given.
 * Several on one handler add up, each policy named apart: two of one name (or two
 * unnamed) throw where the class is defined.
 *
 * @example
 * ```ts
 * @Controller('auth')
 * export class AuthController {
 *   @RateLimit({ limit: 5, window: '15m', block: { for: '1h', after: 3 } })
 *   @Post('login')
 *   login(@Body() body: LoginDto) {}
 * }
 * ```
 */
export function RateLimit(options: RateLimitOptions = {}): ClassOrMethodDecorator {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`@RateLimit: "options" must be an object, got ${String(options)}`)
  }
  check(RateLimitEngine, options, 'RateLimit')
  const decorator = (
    target: object,
    property?: string | symbol,
    descriptor?: PropertyDescriptor,
  ) => {
    // Where Nest's SetMetadata puts it: on the handler function, or on the class.
    const at = (descriptor?.value ?? target) as object
    const below = Reflect.getOwnMetadata(RATE_LIMIT_METADATA, at) as Options | undefined
    const where =
      property === undefined
        ? (target as { name?: string }).name
        : `${(target as object).constructor.name}.${String(property)}`
    const value =
      below === undefined ? options : stack(options as Options, below, where ?? 'a class')
    Reflect.defineMetadata(RATE_LIMIT_METADATA, value, at)
    return descriptor ?? target
  }
  return decorator as ClassOrMethodDecorator
}

/**
 * Lets a controller's or a handler's requests through without counting them against any
 * rate limit of the guard (a bulkhead still applies); given names, skips only the
 * policies of those names (`@SkipRateLimit(['short'])`, as `@SkipThrottle({ short: true })`).
 * `@SkipRateLimit(false)` on a handler limits it again inside a skipped controller.
 *
 * @example
 * ```ts
 * @SkipRateLimit()
 * @Get('health')
 * health() { return 'ok' }
 * ```
 */
export function SkipRateLimit(skip: boolean | readonly string[] = true): ClassOrMethodDecorator {
  const names = Array.isArray(skip) && skip.every((name) => typeof name === 'string')
  if (typeof skip !== 'boolean' && !names) {
    throw new TypeError(
      `@SkipRateLimit: "skip" must be a boolean or an array of policy names, got ${String(skip)}`,
    )
  }
  return SetMetadata(SKIP_RATE_LIMIT_METADATA, names ? Object.freeze([...skip]) : skip)
}

/**
 * Runs a handler inside a bulkhead: at most `max` requests at once (per key; default one
 * bulkhead for all), queueing up to `maxQueue` for up to `queueTimeout`, else 503 +
 * `Retry-After`. The slot is held until the response has finished (or its client left and
 * the handler ended it, or `holdTimeout` passed), as in every sluice adapter. On a
 * controller, one bulkhead is shared by all its handlers; a handler's own overrides it.
 *
 * @example
 * ```ts
 * @Bulkhead({ max: 4, maxQueue: 20, queueTimeout: '5s' })
 * @Get('report')
 * async report() { return this.reports.build() }
 * ```
 */
export function Bulkhead(options: BulkheadOptions = {}): ClassOrMethodDecorator {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`@Bulkhead: "options" must be an object, got ${String(options)}`)
  }
  check(BulkheadEngine, options, 'Bulkhead')
  return SetMetadata(BULKHEAD_METADATA, options)
}

/**
 * Validates a decorator's options when the class is defined, as every sluice factory does
 * at construction: the guard builds the real engine at the first request, on the module's
 * store. This one, on a store of its own, is dropped.
 */
function check(
  Engine: typeof RateLimitEngine | typeof BulkheadEngine,
  options: object,
  factory: string,
): void {
  new Engine({
    options: { store: memoryStore(), ...options },
    request: nestRequest,
    response: nestResponse,
    factory,
  })
}
