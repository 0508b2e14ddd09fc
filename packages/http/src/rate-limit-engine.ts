import { type Clock, type Duration, parseDuration, systemClock } from '@sluice/core'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import { type Decision, primaryIndex } from './decision'
import {
  createHeaderWriter,
  type HeaderMode,
  type HeaderWriter,
  retryAfterSeconds,
} from './headers'
import { FALLBACK_KEY, ip, type KeyExtractor } from './keys'
import { isPromiseLike } from './maybe-promise'
import { memoryStore } from './memory-store'
import { compilePolicies, type PoliciesOptions } from './policy'
import type { MaybePromise, Policy, Store, TakeResult } from './store'
import {
  describe,
  nonNegativeInteger,
  optionalFunction,
  optionsObject,
  positiveInteger,
  rangeError,
  statusCode,
  typeError,
} from './validate'
import { emitWarning } from './warnings'

/** A response body: text, or an object sent as JSON. */
export type LimitedBody = string | Record<string, unknown>

/** Options of waiting mode: delay requests over the limit instead of refusing them. */
export interface WaitOptions {
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
export interface RateLimitOptions<Req = unknown, Res = unknown> extends PoliciesOptions {
  /** Finds the budget a request counts against. Default `keys.ip()`. */
  key?: KeyExtractor<Req>
  /** Permits a request takes: a positive integer or a function of the request. Default 1. */
  cost?: number | ((req: Req) => number | Promise<number>)
  /** Which RateLimit headers to send. Default `'draft-8'`. */
  headers?: HeaderMode
  /** Delay requests over the limit (up to `timeout`) instead of refusing them. */
  wait?: WaitOptions
  /** Requests for which this returns true are neither counted nor limited. */
  skip?: (req: Req) => boolean | Promise<boolean>
  /**
   * Called once the response has finished; returning true gives the request's permits
   * back (outcome-based counting, e.g. `res.statusCode < 400` to count only failures).
   * Responses the client abandoned are never refunded.
   */
  refundWhen?: (req: Req, res: Res) => boolean | Promise<boolean>
  /** Status of a refusal. Default 429. */
  statusCode?: number
  /** Body of a refusal. Default `'Too Many Requests'`. */
  message?: LimitedBody | ((req: Req, res: Res) => LimitedBody | Promise<LimitedBody>)
  /** Where per-key state lives. Default `memoryStore({ maxKeys: 100_000, clock })`. */
  store?: Store
  /** Time source for waiting (and for the default store). Default `systemClock`. */
  clock?: Clock
}

const OPTION_NAMES = new Set([
  'algorithm',
  'limit',
  'window',
  'capacity',
  'slots',
  'warmUp',
  'policies',
  'key',
  'cost',
  'name',
  'headers',
  'wait',
  'skip',
  'refundWhen',
  'statusCode',
  'message',
  'store',
  'clock',
])

/** Names other rate limiters use, and what they are called here. */
const RENAMED: Record<string, string> = {
  windowMs: 'window',
  max: 'limit',
  keyGenerator: 'key',
  handler: 'onLimited',
  standardHeaders: 'headers',
  legacyHeaders: 'headers',
}

/**
 * Refuses option names this factory does not know: a typo (or an express-rate-limit
 * name such as `windowMs`) would otherwise silently leave the default in force.
 */
export function checkOptionNames(
  factory: string,
  options: object,
  known: ReadonlySet<string>,
  adapterOptions: readonly string[],
): void {
  for (const name of Object.keys(options)) {
    if (known.has(name) || adapterOptions.includes(name)) continue
    const hint = RENAMED[name] === undefined ? '' : ` (did you mean "${RENAMED[name]}"?)`
    throw new TypeError(`${factory}: unknown option "${name}"${hint}`)
  }
}

/** Checks that `store` has the Store methods. */
export function checkStore(factory: string, store: unknown): Store {
  const s = store as Partial<Store> | null
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.take !== 'function' ||
    typeof s.refund !== 'function' ||
    typeof s.release !== 'function' ||
    typeof s.get !== 'function' ||
    typeof s.reset !== 'function'
  ) {
    throw typeError(factory, 'store', 'must implement take, refund, release, get and reset', store)
  }
  return s as Store
}

/** Checks a clock option. */
export function checkClock(factory: string, clock: unknown): Clock {
  if (clock === undefined) return systemClock
  const c = clock as Partial<Clock> | null
  if (
    typeof c !== 'object' ||
    c === null ||
    typeof c.now !== 'function' ||
    typeof c.sleep !== 'function'
  ) {
    throw typeError(factory, 'clock', 'must be an object with now() and sleep()', clock)
  }
  return c as Clock
}

/** Checks a refusal body (or body function). */
export function checkMessage(factory: string, message: unknown): void {
  if (typeof message === 'string' || typeof message === 'function') return
  if (typeof message === 'object' && message !== null && !Array.isArray(message)) return
  throw typeError(factory, 'message', 'must be a string, an object or a function', message)
}

interface Waiter {
  wake: (() => void) | undefined
}

/**
 * The framework-neutral rate limiter an adapter wraps: compiles and validates the options
 * once, then per request runs skip → key → cost → `store.take` (all policies, atomically)
 * → decision, with waiting mode, headers, `Retry-After` and refunds.
 *
 * @example
 * ```ts
 * const engine = new RateLimitEngine({ limit: 10, window: '1s' }, requestAccessors, responseAccessors)
 * const decision = await engine.decide(req, res)
 * if (decision) engine.writeHeaders(res, decision)
 * ```
 */
export class RateLimitEngine<Req = unknown, Res = unknown> {
  /** The validated policies, in the order given. */
  readonly policies: readonly Policy[]
  readonly store: Store
  /** Status of a refusal. */
  readonly statusCode: number
  /** Whether `settle` has anything to do (a `refundWhen` was given). */
  readonly refunds: boolean
  readonly #request: RequestAccessors<Req>
  readonly #response: ResponseAccessors<Req, Res>
  readonly #key: KeyExtractor<Req>
  readonly #cost: number
  readonly #costOf: ((req: Req) => number | Promise<number>) | undefined
  readonly #skip: ((req: Req) => boolean | Promise<boolean>) | undefined
  readonly #refundWhen: ((req: Req, res: Res) => boolean | Promise<boolean>) | undefined
  readonly #headers: HeaderWriter | undefined
  readonly #message: RateLimitOptions<Req, Res>['message']
  readonly #waitMs: number | undefined
  readonly #maxQueue: number
  readonly #clock: Clock
  readonly #queues = new Map<string, Waiter[]>()
  readonly #factory: string

  /**
   * @param adapterOptions Option names the adapter handles itself (e.g. `onLimited`), so
   *   they are not refused as unknown.
   */
  constructor(
    options: RateLimitOptions<Req, Res>,
    request: RequestAccessors<Req>,
    response: ResponseAccessors<Req, Res>,
    factory = 'rateLimit',
    adapterOptions: readonly string[] = [],
  ) {
    optionsObject(factory, options)
    checkOptionNames(factory, options, OPTION_NAMES, adapterOptions)
    this.#factory = factory
    this.#request = request
    this.#response = response
    this.policies = compilePolicies(options, factory)
    this.#clock = checkClock(factory, options.clock)
    this.store =
      options.store === undefined
        ? memoryStore({ clock: this.#clock })
        : checkStore(factory, options.store)
    this.#key = optionalFunction(factory, 'key', options.key) ?? ip()
    const { cost = 1 } = options
    if (typeof cost === 'function') {
      this.#cost = 1
      this.#costOf = cost
    } else {
      this.#cost = positiveInteger(factory, 'cost', cost)
      this.#costOf = undefined
    }
    this.#skip = optionalFunction(factory, 'skip', options.skip)
    this.#refundWhen = optionalFunction(factory, 'refundWhen', options.refundWhen)
    this.refunds = this.#refundWhen !== undefined
    this.#headers = createHeaderWriter(options.headers ?? 'draft-8', this.policies, factory)
    this.statusCode = statusCode(factory, 'statusCode', options.statusCode ?? 429)
    this.#message = options.message ?? 'Too Many Requests'
    checkMessage(factory, this.#message)
    const { wait } = options
    if (wait === undefined) {
      this.#waitMs = undefined
      this.#maxQueue = 0
    } else {
      if (typeof wait !== 'object' || wait === null) {
        throw typeError(factory, 'wait', 'must be an object { timeout, maxQueue }', wait)
      }
      if (wait.timeout === undefined) {
        throw typeError(factory, 'wait.timeout', 'is required', wait.timeout)
      }
      this.#waitMs = parseDuration(wait.timeout, `${factory}: "wait.timeout"`)
      this.#maxQueue = nonNegativeInteger(factory, 'wait.maxQueue', wait.maxQueue ?? 100)
    }
  }

  /**
   * Checks one request: `undefined` when `skip` said so, otherwise the decision (admitted
   * or refused). In waiting mode a request over the limit resolves once it is admitted or
   * its wait is known to be too long; if the client goes away while it waits, the promise
   * rejects with the abort reason and the request has left the queue.
   */
  decide(req: Req, res: Res): MaybePromise<Decision | undefined> {
    if (this.#skip !== undefined) {
      const skipped = this.#skip(req)
      if (isPromiseLike(skipped)) {
        return skipped.then((skip) => (skip ? undefined : this.#keyed(req, res)))
      }
      if (skipped) return undefined
    }
    return this.#keyed(req, res)
  }

  #keyed(req: Req, res: Res): MaybePromise<Decision> {
    const key = this.#key(req, this.#request)
    if (isPromiseLike(key)) return key.then((k) => this.#costed(req, res, k))
    return this.#costed(req, res, key)
  }

  #costed(req: Req, res: Res, rawKey: string | undefined): MaybePromise<Decision> {
    const key = rawKey === undefined || rawKey === '' ? FALLBACK_KEY : rawKey
    if (typeof key !== 'string') {
      throw new TypeError(
        `${this.#factory}: "key" must return a string or undefined, got ${describe(key)}`,
      )
    }
    if (this.#costOf === undefined) return this.#take(req, res, key, this.#cost)
    const cost = this.#costOf(req)
    if (isPromiseLike(cost)) return cost.then((c) => this.#take(req, res, key, this.#checkCost(c)))
    return this.#take(req, res, key, this.#checkCost(cost))
  }

  #checkCost(cost: unknown): number {
    if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 1) {
      throw rangeError(this.#factory, 'cost', 'must return a positive integer', cost)
    }
    return cost
  }

  #take(req: Req, res: Res, key: string, cost: number): MaybePromise<Decision> {
    if (this.#waitMs !== undefined && this.#queues.has(key)) {
      // Others are already waiting for this key: taking now would jump the queue.
      return this.#wait(req, res, key, cost, undefined)
    }
    const taken = this.store.take(key, this.policies, cost)
    if (isPromiseLike(taken)) return taken.then((t) => this.#decided(req, res, key, cost, t))
    return this.#decided(req, res, key, cost, taken)
  }

  #decided(
    req: Req,
    res: Res,
    key: string,
    cost: number,
    taken: TakeResult,
  ): MaybePromise<Decision> {
    if (!taken.allowed && this.#waitMs !== undefined) return this.#wait(req, res, key, cost, taken)
    return decision(taken, key, cost)
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
    cost: number,
    first: TakeResult | undefined,
  ): Promise<Decision> {
    const clock = this.#clock
    const deadline = clock.now() + this.#waitMs!
    let queue = this.#queues.get(key)
    if ((queue?.length ?? 0) >= this.#maxQueue) {
      return decision(first ?? (await this.#refused(key)), key, cost)
    }
    if (queue === undefined) {
      queue = []
      this.#queues.set(key, queue)
    }
    const me: Waiter = { wake: undefined }
    queue.push(me)
    const signal = this.#response.signal(req, res)
    try {
      if (queue[0] !== me && !(await this.#turn(me, deadline, signal))) {
        return decision(await this.#refused(key), key, cost)
      }
      let taken = first ?? (await this.store.take(key, this.policies, cost))
      while (!taken.allowed) {
        const { retryAfterMs } = decision(taken, key, cost)
        if (!(clock.now() + retryAfterMs <= deadline)) break
        // A refusal always names a wait; should a store say 0, pause a tick's worth rather than spin.
        await clock.sleep(retryAfterMs > 0 ? retryAfterMs : 1, signal)
        taken = await this.store.take(key, this.policies, cost)
      }
      return decision(taken, key, cost)
    } finally {
      const index = queue.indexOf(me)
      queue.splice(index, 1)
      if (queue.length === 0) this.#queues.delete(key)
      else if (index === 0) queue[0]!.wake?.()
    }
  }

  /** Waits to reach the head of the queue: true when it did, false when the deadline came first. */
  async #turn(me: Waiter, deadline: number, signal: AbortSignal): Promise<boolean> {
    const timer = new AbortController()
    const turn = new Promise<boolean>((resolve) => {
      me.wake = () => resolve(true)
    })
    const timeout = this.#clock
      .sleep(Math.max(0, deadline - this.#clock.now()), AbortSignal.any([signal, timer.signal]))
      .then(() => false)
    try {
      return await Promise.race([turn, timeout])
    } finally {
      me.wake = undefined
      timer.abort()
      timeout.catch(() => {})
    }
  }

  /** The current state for a request refused without taking (queue full, timed out). */
  async #refused(key: string): Promise<TakeResult> {
    const results = await this.store.get(key, this.policies)
    return { allowed: false, results }
  }

  /** Sets the configured RateLimit headers for a decision. */
  writeHeaders(res: Res, decided: Decision): void {
    this.#headers?.write(res, this.#response, decided)
  }

  /** The `Retry-After` value of a refusal, whole seconds rounded up. */
  retryAfter(decided: Decision): string {
    const shown = decided.results.find((r) => r.policy.name === decided.policy)
    return String(retryAfterSeconds(decided.retryAfterMs, shown?.policy.windowMs ?? 1000))
  }

  /** The body of a refusal. */
  message(req: Req, res: Res): MaybePromise<LimitedBody> {
    const message = this.#message!
    return typeof message === 'function' ? message(req, res) : message
  }

  /**
   * Call once the response has finished: gives the permits back when `refundWhen` says
   * so. Only admitted requests took anything, so only they are refunded.
   */
  settle(req: Req, res: Res, decided: Decision): MaybePromise<void> {
    if (this.#refundWhen === undefined || !decided.allowed) return
    const refund = this.#refundWhen(req, res)
    if (isPromiseLike(refund)) {
      return refund.then((yes) =>
        yes ? this.store.refund(decided.key, this.policies, decided.cost) : undefined,
      )
    }
    if (refund) return this.store.refund(decided.key, this.policies, decided.cost)
  }

  /**
   * `settle` for adapters to call from a response's finish: it runs with no request left
   * to fail, so a throwing `refundWhen` or a failing store is reported once per failure
   * as a `SluiceWarning` (`ERR_SLUICE_REFUND_FAILED`) instead of crashing the process.
   */
  settleAfterResponse(req: Req, res: Res, decided: Decision): void {
    const report = (error: unknown) =>
      emitWarning(
        this.#factory,
        'ERR_SLUICE_REFUND_FAILED',
        `refundWhen or store.refund failed after the response: ${String(error)}`,
      )
    try {
      const settled = this.settle(req, res, decided)
      if (isPromiseLike(settled)) settled.then(undefined, report)
    } catch (error) {
      report(error)
    }
  }

  /** Forgets a key's state under this middleware's policies (an admin "unblock"). */
  resetKey(key: string): MaybePromise<void> {
    return this.store.reset(key, this.policies)
  }
}

/** Builds the decision object from a store answer. */
export function decision(taken: TakeResult, key: string, cost: number): Decision {
  const { allowed, results } = taken
  const shown = results[primaryIndex(results, allowed)]!
  let retryAfterMs = 0
  if (!allowed)
    for (const r of results) if (!r.allowed) retryAfterMs = Math.max(retryAfterMs, r.retryAfterMs)
  return {
    allowed,
    limit: shown.limit,
    remaining: shown.remaining,
    resetMs: shown.resetMs,
    key,
    policy: shown.policy.name,
    retryAfterMs,
    cost,
    results,
  }
}
