import type { Duration, ReconfigureOptions } from '@sluice/core'
import { readCarry } from '@sluice/core/internal'
import {
  readBoolean,
  readDuration,
  readFunction,
  readNonNegativeInteger,
  readOptions,
  readPositiveInteger,
  typeError,
} from '@sluice/core/validation'
import type { Cost, Policy, PolicyResult, TakeResult } from '@sluice/keyed/store'
import {
  andThen,
  checkCarries,
  claimPolicies,
  costAt,
  emitWarning,
  isPromiseLike,
  KeyedCore,
  type KeyedCost,
  livePolicies,
  longestWait,
  type MaybePromise,
  POLICY_OPTIONS,
  type PolicyOptions,
  rateLimitChannel,
  readKeyedCost,
  totalCost,
  warnIfBareMilliseconds,
} from '@sluice/keyed/store'
import { type Decision, primaryIndex } from './decision'
import {
  type CommonOptions,
  callbackFailed,
  Engine,
  type EngineInit,
  type FollowedResponse,
  type LimitedBody,
  type Outcome,
  QUOTA_EXCEEDED,
  type Refusal,
  SKIPPED,
} from './engine'
import { createHeaderWriter, type HeaderMode, type HeaderWriter } from './headers'
import { ip, type KeyExtractor } from './keys'
import { MetPolicies, type PoliciesOptions, PolicySource } from './policy'

/** Options of waiting mode: delay requests over the limit instead of refusing them. */
export interface WaitingOptions {
  /** The longest a request may be held back; beyond it the request is refused. */
  timeout: Duration
  /** Requests per key that may wait at once; more are refused at once. Default 100. */
  maxQueue?: number
}

/**
 * Options of `rateLimit()`, the same in every adapter. `Req`/`Res` are the framework's
 * request and response as the callbacks receive them.
 *
 * @example
 * ```ts
 * const options: RateLimitOptions<Request, Response> = {
 *   limit: 100,
 *   window: '1m',
 *   key: keys.ip(),
 *   refundWhen: (_req, res) => res.statusCode < 400,
 * }
 * ```
 */
export interface RateLimitOptions<Req = unknown, Res = unknown>
  extends Omit<PoliciesOptions, 'limit' | 'policies'>,
    CommonOptions<Req, Res> {
  /** Requests per window: a number, or a function of the request (plans, tenants). Default 100. */
  limit?: number | ((req: Req) => number | Promise<number>)
  /**
   * Several limits checked together, atomically; or a function of the request that picks
   * them (compiled once per distinct value).
   */
  policies?:
    | readonly PolicyOptions[]
    | ((req: Req) => readonly PolicyOptions[] | Promise<readonly PolicyOptions[]>)
  /** Finds the budget a request counts against. Default `keys.ip()`. */
  key?: KeyExtractor<Req>
  /**
   * Permits a request takes (with `settle`: its estimate): a positive integer for every
   * policy, `{ [policyName]: n }` charging each named policy its own amount (a policy not
   * named is charged 0), or a function of the request returning either. Default 1.
   */
  cost?: KeyedCost | ((req: Req) => KeyedCost | Promise<KeyedCost>)
  /** Which RateLimit headers to send. Default `'draft-8'` (`false` in dry run). */
  headers?: HeaderMode
  /** Delay requests over the limit (up to `timeout`) instead of refusing them. */
  wait?: WaitingOptions
  /** Requests for which this returns true are neither counted nor limited. */
  skip?: (req: Req) => boolean | Promise<boolean>
  /**
   * Called once the response has finished; returning true gives the request's permits
   * back (outcome-based counting, e.g. `res.statusCode < 400` to count only failures).
   * Responses the client abandoned are never refunded, and permits whose window has
   * passed are not given back.
   */
  refundWhen?: (req: Req, res: Res) => boolean | Promise<boolean>
  /**
   * Called once the response is over, whether it finished or its client went away (`res`
   * tells which): the request's actual cost, for a `cost` that was only an estimate (an
   * LLM answer's tokens, known at the end of its stream). The difference is refunded, as
   * far as it still counts, or the excess charged as debt that later requests wait out. A
   * number for every policy, or `{ [policyName]: n }` (a policy not named is charged 0).
   * Not with `refundWhen` (return 0 instead).
   */
  settle?: (req: Req, res: Res) => KeyedCost | Promise<KeyedCost>
  /** Status of a refusal. Default 429. */
  statusCode?: number
  /** Body of a refusal. Default `'Too Many Requests'`. */
  message?: LimitedBody | ((req: Req, res: Res) => LimitedBody | Promise<LimitedBody>)
  /**
   * Shadow mode: nothing is refused. The decision and the `sluice:rate-limit` events
   * report what would have happened (`allowed: false`, `enforced: false`); no `Retry-After`,
   * and no RateLimit headers unless `headers` is given.
   */
  dryRun?: boolean
  /**
   * Answer a refusal as RFC 9457 `application/problem+json` with the rate-limit draft's
   * `quota-exceeded` type and `violated-policies`; a string `message` becomes its `detail`.
   */
  problemDetails?: boolean
}

const OPTION_NAMES = [
  ...POLICY_OPTIONS,
  'policies',
  'cost',
  'headers',
  'wait',
  'skip',
  'refundWhen',
  'settle',
  'dryRun',
  'validate',
]

/** Names other rate limiters use, and what to write instead. */
export const RATE_LIMIT_HINTS: Readonly<Record<string, string>> = {
  windowMs: 'use "window": milliseconds or a string such as \'15m\'',
  max: 'use "limit"',
  points: 'use "limit"',
  duration:
    'use "window": rate-limiter-flexible counts seconds, sluice takes \'60s\' or milliseconds',
  blockDuration: 'use "block: { for }"',
  keyGenerator: 'use "key"',
  keyPrefix: 'give each middleware a "name"; the store keeps policies apart by name and spec',
  identifier: 'use "name"',
  handler: 'use "onLimited"',
  standardHeaders: 'use "headers" (\'draft-8\' by default)',
  legacyHeaders: "use headers: 'legacy'",
  skipSuccessfulRequests: 'use refundWhen: (req, res) => res.statusCode < 400',
  skipFailedRequests: 'use refundWhen: (req, res) => res.statusCode >= 400',
  requestWasSuccessful: 'use "refundWhen"',
  passOnStoreError: "use the store's onError, e.g. redisStore({ client, onError: 'allow' })",
  requestPropertyName: 'the decision is always on the request as rateLimit',
  timeWindow: 'use "window"',
  allowList: 'use "skip": (req) => allowed.has(req.ip)',
  ban: 'use block: { for, after }',
  errorResponseBuilder: 'use "message" or "onLimited"',
  enableDraftSpec: 'use "headers"',
  addHeaders: 'use "headers"',
  addHeadersOnExceeding: 'use "headers"',
  skipOnError: "use the store's onError, e.g. redisStore({ client, onError: 'allow' })",
  nameSpace: 'give the middleware a "name"; the store keeps policies apart by name and spec',
}

const WAIT_OPTIONS = ['timeout', 'maxQueue']

/** What `reconfigure` takes: the options that describe the policies. */
export type ReconfigurableOptions<Req = unknown> = Pick<
  RateLimitOptions<Req>,
  'algorithm' | 'limit' | 'window' | 'capacity' | 'slots' | 'warmUp' | 'block' | 'name' | 'policies'
>

const RECONFIGURE_OPTIONS = [...POLICY_OPTIONS, 'policies']

/** The middleware's other options stay as built: say so, rather than "unknown option". */
const RECONFIGURE_HINTS: Readonly<Record<string, string>> = {
  ...RATE_LIMIT_HINTS,
  ...Object.fromEntries(
    [
      'key',
      'store',
      'cost',
      'headers',
      'wait',
      'skip',
      'refundWhen',
      'settle',
      'statusCode',
      'message',
      'dryRun',
      'problemDetails',
      'onLimited',
      'validate',
    ].map((name) => [
      name,
      'only the policies change in reconfigure: build a new middleware for the rest',
    ]),
  ),
}

/**
 * The framework-neutral rate limiter an adapter wraps. It compiles and validates the
 * options once; per request it runs skip → key → policies → cost → take (all policies,
 * atomically, FIFO per key in waiting mode) → decision, writes the headers (and
 * `Retry-After` on a refusal) through the response accessors, publishes the
 * `sluice:rate-limit` event, and hands the adapter an {@link Outcome}. Its keyed part is
 * the keyed limiter's (`KeyedCore` of `@sluice/keyed`): the same key forms, cost checks,
 * store calls, settles and events as `keyedLimiter`, and `get`, `resetKey` and `keyFor`
 * read keys as it does.
 *
 * @example
 * ```ts
 * const engine = new RateLimitEngine({ options: { limit: 10, window: '1s' }, request, response })
 * const outcome = await engine.admit(req, res)
 * if (outcome.action === 'refuse') send(res, outcome.status, await outcome.refusal())
 * ```
 */
export class RateLimitEngine<Req = unknown, Res = unknown> extends Engine<Req, Res> {
  /** The middleware's policies, or those met so far when they depend on the request. */
  source: PolicySource<Req>
  /** The keyed path this middleware's keys take: the keyed limiter's. */
  readonly core: KeyedCore
  /** With policies per request: every one met whose state may still exist (for `get`). */
  readonly #met = new MetPolicies()
  readonly dryRun: boolean
  readonly #cost: KeyedCost
  readonly #costOf: ((req: Req) => KeyedCost | Promise<KeyedCost>) | undefined
  readonly #skip: ((req: Req) => boolean | Promise<boolean>) | undefined
  readonly refundWhen: ((req: Req, res: Res) => boolean | Promise<boolean>) | undefined
  readonly settleCost: ((req: Req, res: Res) => KeyedCost | Promise<KeyedCost>) | undefined
  readonly #headerMode: HeaderMode
  readonly #writers = new WeakMap<readonly Policy[], HeaderWriter | undefined>()
  /** The writer of the fixed policies, found without a WeakMap lookup per request. */
  #fixedWriter: HeaderWriter | undefined
  readonly #waitMs: number | undefined
  readonly #maxQueue: number

  constructor(init: EngineInit<RateLimitOptions<Req, Res>, Req, Res>) {
    super(init, {
      factory: 'rateLimit',
      names: OPTION_NAMES,
      hints: RATE_LIMIT_HINTS,
      status: 429,
      message: 'Too Many Requests',
      key: ip(),
      problem: QUOTA_EXCEEDED,
    })
    const { factory } = this
    const options = this.given as RateLimitOptions<Req, Res>
    this.core = new KeyedCore(this.store)
    this.source = new PolicySource<Req>(options as PoliciesOptions, factory)
    if (this.source.fixed !== undefined) claimPolicies(this.store, this.source.fixed, factory)
    const { cost = 1 } = options
    if (typeof cost === 'function') {
      this.#cost = 1
      this.#costOf = cost
    } else if (typeof cost === 'object' && cost !== null) {
      // Checked against the policies now when they are fixed, else per request.
      if (this.source.fixed !== undefined)
        readKeyedCost(factory, 'cost', this.source.fixed, cost, 1)
      this.#cost = cost
      this.#costOf = undefined
    } else {
      this.#cost = readPositiveInteger(factory, 'cost', cost)
      this.#costOf = undefined
    }
    this.#skip = readFunction(factory, 'skip', options.skip)
    this.refundWhen = readFunction(factory, 'refundWhen', options.refundWhen)
    this.settleCost = readFunction(factory, 'settle', options.settle)
    if (this.refundWhen !== undefined && this.settleCost !== undefined) {
      throw typeError(
        factory,
        'settle',
        'cannot be combined with "refundWhen" (settle can return 0 for a request not to count)',
        options.settle,
      )
    }
    this.dryRun = readBoolean(factory, 'dryRun', options.dryRun, false)
    this.#headerMode =
      options.headers === undefined ? (this.dryRun ? false : 'draft-8') : options.headers
    // Built (and the mode checked) once, here: a bad `headers` fails at construction.
    this.#fixedWriter = createHeaderWriter(this.#headerMode, this.source.fixed ?? [], factory)
    const { wait } = options
    if (wait === undefined) {
      this.#waitMs = undefined
      this.#maxQueue = 0
    } else {
      if (typeof wait !== 'object' || wait === null || Array.isArray(wait)) {
        throw typeError(factory, 'wait', 'must be an object { timeout, maxQueue }', wait)
      }
      const waiting = readOptions(`${factory}: "wait"`, wait, WAIT_OPTIONS)
      if (waiting.timeout === undefined)
        throw typeError(factory, 'wait.timeout', 'is required', undefined)
      if (this.dryRun) {
        throw typeError(
          factory,
          'wait',
          'cannot be combined with dryRun (nothing waits in dry run)',
          wait,
        )
      }
      warnIfBareMilliseconds(factory, 'wait.timeout', waiting.timeout)
      this.#waitMs = readDuration(factory, 'wait.timeout', waiting.timeout)
      this.#maxQueue =
        waiting.maxQueue === undefined
          ? 100
          : readNonNegativeInteger(factory, 'wait.maxQueue', waiting.maxQueue)
    }
  }

  /**
   * Changes the middleware's limits while it runs, without resetting anyone: `options`
   * are the whole policies as `rateLimit` takes them (`limit`, `window`, `algorithm`, …,
   * or `policies`; `limit` and `policies` may be functions; left out means the default,
   * never the current value), and each key's state carries over to the new spec of its
   * policy's name the next time the key is touched, as `carry` says (default
   * `'proportional'`). A fixed unnamed policy keeps the name it had. Everything else
   * (key, store, headers, cost, …) stays. Requests waiting for their permits ask again
   * under the new spec. Refused, with the old spec left working: another algorithm under
   * a name, a spec that fails validation, an unknown `carry` or option.
   *
   * @example
   * ```ts
   * limiter.reconfigure({ limit: 120, window: '1m' }, { carry: 'proportional' })
   * ```
   */
  reconfigure(options: ReconfigurableOptions<Req>, how?: ReconfigureOptions): void {
    const method = `${this.factory}.reconfigure`
    const carry = readCarry(method, how)
    checkCarries(this.store, method)
    const given = readOptions(
      method,
      options,
      RECONFIGURE_OPTIONS,
      RECONFIGURE_HINTS,
    ) as PoliciesOptions
    const old = this.source.fixed
    // An unnamed fixed policy keeps its name, so its state is carried, not started afresh.
    const single = given.policies === undefined && typeof given.limit !== 'function'
    const named =
      single && given.name === undefined && old?.length === 1
        ? { ...given, name: old[0]!.name }
        : given
    const source = new PolicySource<Req>(named, method, carry)
    for (const policy of source.fixed ?? []) {
      const before =
        this.source.fixed?.find((p) => p.name === policy.name) ?? this.#met.named(policy.name)
      if (before !== undefined && before.spec.algorithm !== policy.spec.algorithm) {
        throw new TypeError(
          `${method}: "algorithm" must stay '${before.spec.algorithm}' for policy "${policy.name}" (state carries over only within one algorithm: give the policy another name to start it afresh), got '${policy.spec.algorithm}'`,
        )
      }
    }
    if (source.fixed !== undefined) {
      const cost = (this.given as RateLimitOptions<Req, Res>).cost
      if (typeof cost === 'object' && cost !== null) {
        readKeyedCost(method, 'cost', source.fixed, cost, 1)
      }
      claimPolicies(this.store, source.fixed, method)
    }
    const writer = createHeaderWriter(this.#headerMode, source.fixed ?? [], method)
    this.source = source
    // A name met before may stand for another spec now: reading it under the old one
    // would carry its keys back to that spec. Policies are met afresh from here.
    this.#met.clear()
    this.#fixedWriter = writer
    this.queue.wakeAll()
  }

  /**
   * The policies to settle a request decided under `policies` with: the current fixed
   * ones of the same names after a reconfiguration (so a refund or a waiter's next take
   * does not bring the old spec back), else `policies` themselves.
   */
  #live(policies: readonly Policy[]): readonly Policy[] {
    return livePolicies(policies, this.source.fixed)
  }

  /**
   * The policies of a request, for inspection (`get`): the fixed ones, or every one met
   * whose state may still exist.
   */
  get policies(): readonly Policy[] {
    return this.source.fixed ?? this.#met.list()
  }

  #writer(policies: readonly Policy[]): HeaderWriter | undefined {
    if (policies === this.source.fixed) return this.#fixedWriter
    if (this.#writers.has(policies)) return this.#writers.get(policies)
    const writer = createHeaderWriter(this.#headerMode, policies, this.factory)
    this.#writers.set(policies, writer)
    return writer
  }

  /**
   * Decides one request and prepares the answer. Never throws: a failing callback or
   * store rejects the returned promise (in dry run the request passes instead, reported
   * by a warning and a `sluice:rate-limit` event with its `error`). In waiting mode a
   * request over the limit resolves once it is admitted or its wait is known to be too
   * long; if its client goes away while it waits, the promise rejects with the abort
   * reason and the request has left the queue.
   */
  admit(req: Req, res: Res): MaybePromise<Outcome> {
    let decided: MaybePromise<Outcome>
    try {
      if (this.proxy.pending) this.proxy.check(req)
      decided = this.#admit(req, res)
    } catch (error) {
      return this.dryRun ? this.#undecided(error) : Promise.reject(error)
    }
    if (!this.dryRun || !isPromiseLike(decided)) return decided
    return Promise.resolve(decided).then(undefined, (error: unknown) => this.#undecided(error))
  }

  #admit(req: Req, res: Res): MaybePromise<Outcome> {
    const earlier = this.decidedBefore(req)
    if (earlier !== undefined) return new RateLimitOutcome(this, req, res, earlier, false)
    if (this.#skip === undefined) return this.#keyed(req, res)
    const skipped = this.#call('skip', this.#skip, req)
    if (isPromiseLike(skipped)) {
      return Promise.resolve(skipped).then((skip) => (skip ? SKIPPED : this.#keyed(req, res)))
    }
    return skipped ? SKIPPED : this.#keyed(req, res)
  }

  /** Calls a user callback, naming its option should it throw or reject. */
  #call<T>(option: string, callback: (req: Req) => T | Promise<T>, req: Req): MaybePromise<T> {
    let value: T | Promise<T>
    try {
      value = callback(req)
    } catch (error) {
      throw callbackFailed(this.factory, option, error)
    }
    if (!isPromiseLike(value)) return value
    return Promise.resolve(value).then(undefined, (error: unknown) => {
      throw callbackFailed(this.factory, option, error)
    })
  }

  /**
   * Shadow mode never changes what a client gets: a request whose decision failed (a
   * throwing key, a failing store) passes, and the failure is reported.
   */
  #undecided(error: unknown): Outcome {
    emitWarning(
      this.factory,
      'ERR_SLUICE_DRY_RUN_FAILED',
      `dryRun could not decide a request, so it passed undecided: ${String(error)}`,
    )
    if (rateLimitChannel.hasSubscribers) {
      rateLimitChannel.publish({
        key: '',
        policy: '',
        allowed: true,
        enforced: false,
        remaining: 0,
        cost: 0,
        retryAfterMs: 0,
        policies: [],
        error,
      })
    }
    return SKIPPED
  }

  #keyed(req: Req, res: Res): MaybePromise<Outcome> {
    const key = this.keyOf(req)
    if (typeof key !== 'string') {
      return Promise.resolve(key).then((k) => this.#policied(req, res, k))
    }
    return this.#policied(req, res, key)
  }

  #policied(req: Req, res: Res, key: string): MaybePromise<Outcome> {
    const fixed = this.source.fixed
    if (fixed !== undefined) return this.#costed(req, res, key, fixed)
    const policies = this.source.resolve(req)
    if (isPromiseLike(policies)) {
      return Promise.resolve(policies).then((p) => this.#costed(req, res, key, this.#meet(p)))
    }
    return this.#costed(req, res, key, this.#meet(policies))
  }

  /** Policies picked for a request: met now, so `get` reads them while their state may last. */
  #meet(policies: readonly Policy[]): readonly Policy[] {
    this.#met.met(policies, this.clock.now())
    return policies
  }

  #costed(req: Req, res: Res, key: string, policies: readonly Policy[]): MaybePromise<Outcome> {
    if (this.#costOf === undefined) {
      const cost = this.#cost
      const charged = typeof cost === 'number' ? cost : this.#checkCost(cost, policies)
      return this.#take(req, res, key, policies, charged)
    }
    const cost = this.#call('cost', this.#costOf, req)
    if (isPromiseLike(cost)) {
      return Promise.resolve(cost).then((c) =>
        this.#take(req, res, key, policies, this.#checkCost(c, policies)),
      )
    }
    return this.#take(req, res, key, policies, this.#checkCost(cost, policies))
  }

  /** What `cost` gave (returned, or an object per policy), as the store takes it. */
  #checkCost(cost: unknown, policies: readonly Policy[]): Cost {
    return readKeyedCost(this.factory, 'cost', policies, cost, 1, true)
  }

  #take(
    req: Req,
    res: Res,
    key: string,
    policies: readonly Policy[],
    cost: Cost,
  ): MaybePromise<Outcome> {
    if (this.#waitMs !== undefined && this.queue.has(key)) {
      // Others are already waiting for this key: taking now would jump the queue.
      return this.#wait(req, res, key, policies, cost, undefined).then((taken) =>
        this.#decided(req, res, key, policies, cost, taken),
      )
    }
    const taken = this.core.take(key, policies, cost)
    if (isPromiseLike(taken)) {
      return Promise.resolve(taken).then((t) => this.#taken(req, res, key, policies, cost, t))
    }
    return this.#taken(req, res, key, policies, cost, taken)
  }

  #taken(
    req: Req,
    res: Res,
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    taken: TakeResult,
  ): MaybePromise<Outcome> {
    if (taken.allowed || this.#waitMs === undefined) {
      return this.#decided(req, res, key, policies, cost, taken)
    }
    return this.#wait(req, res, key, policies, cost, taken).then((t) =>
      this.#decided(req, res, key, policies, cost, t),
    )
  }

  /**
   * Waiting mode, nginx `limit_req` without `nodelay`: requests over the limit queue per
   * key, FIFO; the head sleeps until the store says its permits are due, then takes them.
   * A request whose wait would end past its timeout is refused at once, not after a
   * pointless sleep.
   */
  async #wait(
    req: Req,
    res: Res,
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    first: TakeResult | undefined,
  ): Promise<TakeResult> {
    const deadline = this.clock.now() + this.#waitMs!
    const me = this.queue.join(key, this.#maxQueue)
    if (me === undefined) return first ?? this.#current(key, policies)
    const signal = this.response.signal(req, res)
    try {
      let taken = first
      for (;;) {
        if (this.queue.isHead(me)) {
          taken ??= await this.core.take(key, this.#live(policies), cost)
          if (taken.allowed) return taken
          const retryAfterMs = longestWait(taken.results)
          if (!(this.clock.now() + retryAfterMs <= deadline)) return taken
          // A refusal always names a wait; should a store say 0, pause a tick rather than spin.
          await this.queue.sleep(me, retryAfterMs > 0 ? retryAfterMs : 1, signal)
          taken = undefined
        } else {
          const left = deadline - this.clock.now()
          if (left <= 0) return this.#current(key, policies)
          await this.queue.sleep(me, left, signal)
        }
      }
    } finally {
      this.queue.leave(me)
    }
  }

  /** The current state, for a request refused without taking (queue full, timed out). */
  async #current(key: string, policies: readonly Policy[]): Promise<TakeResult> {
    return { allowed: false, results: await this.core.get(key, policies) }
  }

  #decided(
    req: Req,
    res: Res,
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    taken: TakeResult,
  ): Outcome {
    const decided = decision(taken, key, cost, !this.dryRun)
    this.remember(req, decided)
    this.#writer(policies)?.write(res, this.response, decided)
    if (!decided.allowed && !this.dryRun) {
      const shown = decided.results[primaryIndex(decided.results, false)]!
      this.writeRetryAfter(res, decided.retryAfterMs, shown.policy.windowMs)
    }
    if (rateLimitChannel.hasSubscribers) this.core.publish(key, cost, taken, decided.enforced)
    return new RateLimitOutcome(this, req, res, decided, true)
  }

  /**
   * Each policy's current state for `key`, taking nothing: `{ policy, limit, remaining,
   * resetMs }` (remaining 0 while blocked). `key` as `keyFor` gives it, or as the key
   * function returns it (a long key is looked up by its digest); with policies per
   * request, every policy met (since the last `reconfigure`) whose state may still exist.
   */
  get(key: string): MaybePromise<readonly KeyState[]> {
    const stored = this.core.lookup(`${this.factory}.get`, key)
    const states = this.core.get(stored, this.policies)
    if (isPromiseLike(states)) return Promise.resolve(states).then(toKeyStates)
    return toKeyStates(states)
  }

  /**
   * Forgets a key's state (and any block) under this middleware's policies; with policies
   * picked per request (`limit` or `policies` functions), under every policy of its store
   * that holds the key, so no plan's state survives.
   */
  resetKey(key: string): MaybePromise<void> {
    const stored = this.core.lookup(`${this.factory}.resetKey`, key)
    return this.core.reset(stored, this.source.fixed)
  }

  /**
   * The exact key this middleware counts `req` under, as the store holds it (a
   * `keys.first` tag, an IPv6 subnet, a long key's digest): what `get` and `resetKey` take.
   */
  keyFor(req: Req): MaybePromise<string> {
    return this.keyOf(req)
  }

  /**
   * After the response, with `settle`: charges the request's actual cost instead of its
   * estimate, whether the response finished or its client left (the callback's `res`
   * tells which), as a keyed reservation's `settle` does. Returns the store calls still
   * under way (their failure reported).
   */
  #settleActual(req: Req, res: Res, decided: Decision): Promise<void> | undefined {
    if (!decided.allowed) return undefined
    const report = (error: unknown) =>
      emitWarning(
        this.factory,
        'ERR_SLUICE_SETTLE_FAILED',
        `settle or the store failed after the response, so the estimate stands: ${String(error)}`,
      )
    const taken = decided.results.map((r) => r.policy)
    const apply = (actual: unknown): MaybePromise<unknown> => {
      const policies = this.#live(taken)
      const real = readKeyedCost(this.factory, 'settle', policies, actual, 0, true)
      const receipts = decided.results.map((r) => r.receipt)
      if (this.source.fixed === undefined) this.#owe(policies, decided.charged, real)
      return this.core.settle(decided.key, policies, decided.charged, real, receipts, false)
    }
    try {
      const actual = this.settleCost!(req, res)
      const applied = andThen(actual, apply)
      if (isPromiseLike(applied)) return Promise.resolve(applied).then(() => undefined, report)
    } catch (error) {
      report(error)
    }
    return undefined
  }

  /** A settle above the estimate under policies per request: their state lasts longer. */
  #owe(policies: readonly Policy[], estimate: Cost, actual: Cost): void {
    const more = policies.map((_, i) => Math.max(0, costAt(actual, i) - costAt(estimate, i)))
    if (more.some((n) => n > 0)) this.#met.owe(policies, more, this.clock.now())
  }

  /**
   * After the response: gives the permits back when `refundWhen` says so. Returns the
   * refund still under way, if any (its failure already reported).
   */
  settle(req: Req, res: Res, decided: Decision, gone: boolean): Promise<void> | undefined {
    if (this.settleCost !== undefined) return this.#settleActual(req, res, decided)
    const refundWhen = this.refundWhen
    // Dry run refunds too: its store took the permits, and its decisions must report what
    // enforcement would decide, which counts only what refundWhen keeps.
    if (refundWhen === undefined || gone || !decided.allowed) return undefined
    const refund = () => {
      const receipts = decided.results.map((r) => r.receipt)
      return this.core.refund(
        decided.key,
        this.#live(decided.results.map((r) => r.policy)),
        decided.charged,
        receipts,
      )
    }
    // Nobody is left to fail: a throwing refundWhen or a failing store is reported instead.
    const report = (error: unknown) =>
      emitWarning(
        this.factory,
        'ERR_SLUICE_REFUND_FAILED',
        `refundWhen or store.refund failed after the response: ${String(error)}`,
      )
    try {
      const yes = refundWhen(req, res)
      if (isPromiseLike(yes)) {
        return Promise.resolve(yes)
          .then((y) => (y ? refund() : undefined))
          .then(undefined, report)
      }
      if (!yes) return undefined
      const refunded = refund()
      if (isPromiseLike(refunded)) return Promise.resolve(refunded).then(undefined, report)
    } catch (error) {
      report(error)
    }
    return undefined
  }
}

/** What `get(key)` reports for one policy. */
export interface KeyState {
  readonly policy: string
  readonly limit: number
  readonly remaining: number
  readonly resetMs: number
}

function toKeyStates(states: readonly PolicyResult[]): readonly KeyState[] {
  return states.map((s) => ({
    policy: s.policy.name,
    limit: s.limit,
    remaining: s.remaining,
    resetMs: s.resetMs,
  }))
}

class RateLimitOutcome<Req, Res> implements Outcome {
  readonly action: 'pass' | 'refuse'
  readonly status: number
  readonly holds: boolean
  #settled = false
  #response: FollowedResponse | undefined

  constructor(
    private readonly engine: RateLimitEngine<Req, Res>,
    private readonly req: Req,
    private readonly res: Res,
    readonly decision: Decision,
    /** False for a second pass through the same middleware: nothing was taken. */
    counted: boolean,
  ) {
    this.action = decision.allowed || !decision.enforced ? 'pass' : 'refuse'
    this.status = engine.statusCode
    this.holds =
      counted &&
      (engine.refundWhen !== undefined || engine.settleCost !== undefined) &&
      decision.allowed
  }

  get exposes(): 'rateLimit' {
    return 'rateLimit'
  }

  get info(): Decision {
    return this.decision
  }

  get onLimited(): ((...args: never[]) => unknown) | undefined {
    return this.engine.onLimited
  }

  refusal(): MaybePromise<Refusal> {
    return this.engine.refusalOf(this.req, this.res, this.decision)
  }

  follow(response: FollowedResponse): void {
    this.#response = response
  }

  done(gone: boolean): void {
    if (!this.holds || this.#settled) return
    this.#settled = true
    const refunding = this.engine.settle(this.req, this.res, this.decision, gone)
    if (refunding !== undefined) this.#response?.waitUntil?.(refunding)
  }

  workDone(): void {}
}

/**
 * Builds the decision from a store answer: the numbers of the policy to show (the
 * refusing one with the longest wait, or the one with the fewest permits left).
 */
export function decision(taken: TakeResult, key: string, cost: Cost, enforced = true): Decision {
  const { allowed, results } = taken
  const shown = results[primaryIndex(results, allowed)]!
  return {
    allowed,
    enforced,
    limit: shown.limit,
    remaining: shown.remaining,
    resetMs: shown.resetMs,
    key,
    policy: shown.policy.name,
    retryAfterMs: allowed ? 0 : longestWait(taken.results),
    cost: totalCost(cost),
    charged: cost,
    results,
  }
}
