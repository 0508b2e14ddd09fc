import { Inject, Injectable, type OnApplicationBootstrap, Optional } from '@nestjs/common'
import { DiscoveryService, Reflector } from '@nestjs/core'
import { type KeyExtractor, keys, memoryStore, type PolicyOptions, type Store } from '@sluice/http'
import { BulkheadEngine, RateLimitEngine } from '@sluice/http/adapter'
import { type KeyedLimiter, keyedLimiter } from '@sluice/keyed'
import { nestRequest, nestResponse } from './accessors'
import { mergePolicies, type Options, policiesOf, policyFields, restOf } from './merge'
import { handlerMetadata } from './metadata'
import type { NestRequest, NestResponse } from './nest-http'
import type { BulkheadOptions, RateLimitOptions, SluiceModuleOptions } from './options'

/** The injection token of the module's options. */
export const SLUICE_OPTIONS = Symbol('sluice:module-options')

/** The cache key of "no policy skipped". */
const NONE = {}

/**
 * The module's limiters: the rate limit every route the guard protects shares, the
 * overrides `@RateLimit()` sets (built once per decorator, on first use), the bulkheads
 * of `@Bulkhead()`, and the store they all count in. Inject it to inspect or forgive a
 * key (`get`, `resetKey`) or to find the key a request counts under (`keyFor`).
 *
 * @example
 * ```ts
 * @Injectable()
 * class Admin {
 *   constructor(private readonly sluice: SluiceService) {}
 *   forgive(key: string) { return this.sluice.resetKey(key) }
 * }
 * ```
 */
@Injectable()
export class SluiceService implements OnApplicationBootstrap {
  /** Where every rate limit of the module counts: the `store` option, or a memory store. */
  readonly store: Store
  /** The module's own rate limit. */
  readonly engine: RateLimitEngine<NestRequest, NestResponse>
  readonly #options: Options
  readonly #engines = new WeakMap<
    object,
    WeakMap<object, RateLimitEngine<NestRequest, NestResponse>>
  >()
  readonly #bulkheads = new WeakMap<object, BulkheadEngine<NestRequest, NestResponse>>()
  readonly #messages = new WeakMap<object, WeakMap<object, KeyedLimiter>>()
  /** The fixed lists behind the policy functions `#merge` makes. */
  readonly #replacing = new WeakMap<object, PolicyOptions[]>()
  /** Keys a guard's `getKey` found, by request, for the engines' key extractor. */
  readonly #keys = new WeakMap<object, string>()

  constructor(
    @Inject(SLUICE_OPTIONS) options: SluiceModuleOptions = {},
    @Optional() @Inject(DiscoveryService) private readonly discovery?: DiscoveryService,
    @Optional() @Inject(Reflector) private readonly reflector?: Reflector,
  ) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError(
        `SluiceModule.forRoot: "options" must be an object, got ${String(options)}`,
      )
    }
    this.#options = { ...options }
    this.store = options.store ?? memoryStore(options.clock ? { clock: options.clock } : {})
    this.engine = this.#build(this.#options, 'SluiceModule.forRoot')
  }

  /**
   * Builds the limiters of every decorated handler of the app's controllers and providers
   * (gateways, resolvers) before the first request: the decorators' options are checked
   * at startup, and no limiter is made while a request is handled, which would look like
   * one made per request (and warn so).
   */
  onApplicationBootstrap(): void {
    const { discovery, reflector } = this
    if (discovery === undefined || reflector === undefined) return
    for (const wrapper of [...discovery.getControllers(), ...discovery.getProviders()]) {
      const type = wrapper.metatype
      // A factory provider's metatype is its factory, not a class with handlers.
      if (typeof type !== 'function' || wrapper.inject != null || wrapper.instance == null) {
        continue
      }
      for (const handler of methodsOf(type.prototype as object | undefined)) {
        const { skip, own, bulkhead } = handlerMetadata(reflector, handler, type)
        if (own !== undefined || Array.isArray(skip)) {
          this.rateLimitFor(own, Array.isArray(skip) ? skip : undefined)
        }
        if (bulkhead !== undefined) this.bulkheadFor(bulkhead)
      }
    }
  }

  /**
   * The rate limit for a handler: the module's, or the module's under a `@RateLimit()`,
   * without the policies `skip` names (`@SkipRateLimit(['short'])`).
   */
  rateLimitFor(
    own: RateLimitOptions | undefined,
    skip?: readonly string[],
  ): RateLimitEngine<NestRequest, NestResponse> {
    if (own === undefined && skip === undefined) return this.engine
    const at = own ?? this.#options
    let bySkip = this.#engines.get(at)
    if (bySkip === undefined) {
      bySkip = new WeakMap()
      this.#engines.set(at, bySkip)
    }
    const skipKey = skip ?? NONE
    let engine = bySkip.get(skipKey)
    if (engine === undefined) {
      engine = this.#build(this.#merge(own as Options | undefined, skip), 'RateLimit')
      bySkip.set(skipKey, engine)
    }
    return engine
  }

  /** The bulkhead of a `@Bulkhead()`, one per decorator. */
  bulkheadFor(own: BulkheadOptions): BulkheadEngine<NestRequest, NestResponse> {
    let engine = this.#bulkheads.get(own)
    if (engine === undefined) {
      engine = new BulkheadEngine({
        options: own,
        request: nestRequest,
        response: nestResponse,
        factory: 'Bulkhead',
      })
      this.#bulkheads.set(own, engine)
    }
    return engine
  }

  /**
   * The keyed limiter for messages (WebSocket, or any context without HTTP): the same
   * policies and store as `rateLimitFor(own)`, keyed by the guard's `getKey`.
   */
  messageLimiterFor(own: RateLimitOptions | undefined, skip?: readonly string[]): KeyedLimiter {
    const at = own ?? this.#options
    let bySkip = this.#messages.get(at)
    if (bySkip === undefined) {
      bySkip = new WeakMap()
      this.#messages.set(at, bySkip)
    }
    let limiter = bySkip.get(skip ?? NONE)
    if (limiter === undefined) {
      const options =
        own === undefined && skip === undefined
          ? this.#options
          : this.#merge(own as Options | undefined, skip)
      const policies = this.#replacing.get(options.policies as object) ?? policiesOf(options)
      if (policies === 'dynamic') {
        throw new TypeError(
          '@sluice/nestjs: a "limit" or "policies" function needs an HTTP request; messages take fixed policies',
        )
      }
      limiter = keyedLimiter({
        policies: policies ?? [{}],
        store: this.store,
        ...(options.clock ? { clock: options.clock as never } : {}),
      })
      bySkip.set(skip ?? NONE, limiter)
    }
    return limiter
  }

  /** Whether messages under `own` (or the module's options) are counted but never refused. */
  messageDryRun(own: RateLimitOptions | undefined): boolean {
    return (own?.dryRun ?? this.#options.dryRun) === true
  }

  /** Makes `key` the key `req` counts under, as a guard's `getKey` found it. */
  useKey(req: object, key: string): void {
    this.#keys.set(req, key)
  }

  /** Each policy's state for `key` under the module's rate limit, taking nothing. */
  get(key: string) {
    return this.engine.get(key)
  }

  /** Forgets a key's state (and any block) under the module's rate limit. */
  resetKey(key: string) {
    return this.engine.resetKey(key)
  }

  /** The exact key the module's rate limit counts `req` under. */
  keyFor(req: NestRequest) {
    return this.engine.keyFor(req)
  }

  #merge(own: Options | undefined, skip: readonly string[] | undefined): Options {
    let module = policiesOf(this.#options)
    if (skip !== undefined && Array.isArray(module)) {
      module = module.filter((p) => p.name === undefined || !skip.includes(p.name))
    }
    if (own === undefined) {
      if (module === undefined || module === 'dynamic') return this.#options
      if (module.length === 0) return { ...restOf(this.#options), skip: () => true }
      return { ...restOf(this.#options), policies: module }
    }
    const mine = policiesOf(own)
    const merged: Options = { ...restOf(this.#options), ...restOf(own) }
    if (mine === undefined) {
      if (module === 'dynamic') return { ...this.#options, ...merged }
      merged.policies = module ?? [{}]
    } else if (mine === 'dynamic' || module === 'dynamic') {
      return { ...merged, ...policyFields(own) }
    } else {
      const policies = mergePolicies(module ?? [{}], mine)
      const replaced = mine.some(
        (p) => p.name !== undefined && module?.some((m) => m.name === p.name && m !== p),
      )
      if (!replaced) {
        merged.policies = policies
      } else {
        // The contract's "same name replaces": this handler counts a policy of the module's
        // name under its own spec. A fixed list would be refused by the store's name
        // claims (one name, two specs, one store), which guard against exactly this in
        // plain middleware; a list given as a function is not claimed. Its state is the
        // module policy's, carried over between the two specs on each change (a store keeps
        // a policy's state by name). Checked here, since a function's policies are compiled
        // at the first request.
        keyedLimiter({ policies })
        const pick = () => policies
        this.#replacing.set(pick, policies)
        merged.policies = pick
      }
    }
    return merged
  }

  #build(options: Options, factory: string): RateLimitEngine<NestRequest, NestResponse> {
    const own = (options.key as KeyExtractor<NestRequest> | undefined) ?? keys.ip()
    const found = this.#keys
    const key: KeyExtractor<NestRequest> = (req, http) => found.get(req) ?? own(req, http)
    return new RateLimitEngine({
      options: { ...options, store: (options.store as Store | undefined) ?? this.store, key },
      request: nestRequest,
      response: nestResponse,
      factory,
    })
  }
}

/** The methods of a class's prototype chain (below `Object.prototype`), getters left alone. */
function* methodsOf(prototype: object | undefined): Generator<object> {
  for (let o: object | null = prototype ?? null; o !== null && o !== Object.prototype; ) {
    for (const name of Object.getOwnPropertyNames(o)) {
      const value = Object.getOwnPropertyDescriptor(o, name)?.value as unknown
      if (name !== 'constructor' && typeof value === 'function') yield value
    }
    o = Object.getPrototypeOf(o) as object | null
  }
}
