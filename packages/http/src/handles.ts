import type { ReconfigureOptions } from '@sluice/core'
import type { MaybePromise, Policy, Store } from '@sluice/keyed/store'
import type { BulkheadEngine } from './bulkhead-engine'
import type { KeyState, RateLimitEngine, ReconfigurableOptions } from './rate-limit-engine'

/** What every adapter's `rateLimit()` middleware carries besides being a middleware. */
export interface RateLimitHandles<Req = never> {
  /** The policies (for limits that depend on the request: those met so far). */
  readonly policies: readonly Policy[]
  /** Where the per-key state lives. */
  readonly store: Store
  /** Each policy's state for `key`, taking nothing. */
  get(key: string): MaybePromise<readonly KeyState[]>
  /** Forgets a key's state (and any block) under this middleware's policies. */
  resetKey(key: string): MaybePromise<void>
  /** The exact key this middleware counts `req` under, as `get` and `resetKey` take it. */
  keyFor(req: Req): MaybePromise<string>
  /**
   * Changes the limits while running, without resetting anyone: the whole policies as
   * `rateLimit` takes them; each key's state carries over on its next request, as `carry`
   * says (default `'proportional'`). Refused (the old limits kept): another algorithm, a
   * bad spec, an unknown `carry`.
   */
  reconfigure(options: ReconfigurableOptions<Req>, how?: ReconfigureOptions): void
}

/** What every adapter's `bulkhead()` middleware carries besides being a middleware. */
export interface BulkheadHandles {
  /** The bulkhead's concurrency policy (an adaptive one's at its current limit). */
  readonly policies: readonly Policy[]
  /** Where slots are counted. */
  readonly store: Store
  /** Requests waiting for a slot under `key` (default: the global key). */
  queued(key?: string): number
  /**
   * Changes `max` while running: raising it serves queued requests; lowering it below the
   * slots held refuses newcomers until enough are released, never revoking one.
   */
  reconfigure(options: { max: number; name?: string }, how?: ReconfigureOptions): void
}

/**
 * Gives an adapter's middleware its handles on the engine's state, so every adapter's
 * `rateLimit()` answers `policies`, `store`, `get`, `resetKey`, `keyFor` and `reconfigure` alike.
 *
 * @example
 * ```ts
 * return withRateLimitHandles(function rateLimit(req, res, next) { ... }, engine)
 * ```
 */
export function withRateLimitHandles<F extends Function, Req, Res>(
  middleware: F,
  engine: RateLimitEngine<Req, Res>,
): F & RateLimitHandles<Req> {
  return Object.defineProperties(middleware, {
    policies: { get: () => engine.policies, enumerable: true },
    store: { value: engine.store, enumerable: true },
    get: { value: (key: string) => engine.get(key), enumerable: true },
    resetKey: { value: (key: string) => engine.resetKey(key), enumerable: true },
    keyFor: { value: (req: Req) => engine.keyFor(req), enumerable: true },
    reconfigure: {
      value: (options: ReconfigurableOptions<Req>, how?: ReconfigureOptions) =>
        engine.reconfigure(options, how),
      enumerable: true,
    },
  }) as F & RateLimitHandles<Req>
}

/**
 * Gives an adapter's bulkhead middleware its handles: `policies`, `store`, `queued`,
 * `reconfigure`.
 *
 * @example
 * ```ts
 * return withBulkheadHandles(function bulkhead(req, res, next) { ... }, engine)
 * ```
 */
export function withBulkheadHandles<F extends Function, Req, Res>(
  middleware: F,
  engine: BulkheadEngine<Req, Res>,
): F & BulkheadHandles {
  return Object.defineProperties(middleware, {
    policies: { get: () => engine.policies, enumerable: true },
    store: { value: engine.store, enumerable: true },
    queued: { value: (key?: string) => engine.queued(key), enumerable: true },
    reconfigure: {
      value: (options: { max: number; name?: string }, how?: ReconfigureOptions) =>
        engine.reconfigure(options, how),
      enumerable: true,
    },
  }) as F & BulkheadHandles
}

/**
 * A TC39 method decorator built from a wrapper: `wrap(method, self)` returns what runs in
 * the method's place for one call. Refuses anything but a method, naming the decorator.
 * Each adapter's `@RateLimit()` and `@Bulkhead()` are this around its middleware.
 *
 * @example
 * ```ts
 * const RateLimit = (options) => {
 *   const middleware = rateLimit(options)
 *   return methodDecorator('RateLimit', (method, self) => (ctx, next) =>
 *     middleware(ctx, () => method.call(self, ctx, next)))
 * }
 * ```
 */
// biome-ignore lint/suspicious/noExplicitAny: any parameters, as ClassMethodDecoratorContext requires.
export function methodDecorator<H extends (...args: any[]) => unknown>(
  name: string,
  wrap: (method: H, self: unknown) => H,
) {
  return function decorate<This, M extends H>(
    method: M,
    context: ClassMethodDecoratorContext<This, M>,
  ): M {
    if (context.kind !== 'method') throw new TypeError(`@${name}: decorates methods only`)
    return function decorated(this: This, ...args: unknown[]) {
      return (wrap(method, this) as (...all: unknown[]) => unknown)(...args)
    } as unknown as M
  }
}
