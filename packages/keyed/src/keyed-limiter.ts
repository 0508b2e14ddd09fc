import { type Clock, type Duration, RateLimitError, type ReconfigureOptions } from '@sluice/core'
import { readCarry } from '@sluice/core/internal'
import {
  readClock,
  readDuration,
  readOptions,
  readPositiveInteger,
  typeError,
} from '@sluice/core/validation'
import { type KeyedCost, readKeyedCost } from './call-checks'
import { rateLimitChannel } from './events'
import { KeyedCore, livePolicies } from './keyed-core'
import { andThen, isPromiseLike, type MaybePromise } from './maybe-promise'
import { isMemoryStore, type MemoryStore, memoryStore } from './memory-store'
import {
  checkCarries,
  claimPolicies,
  compilePolicy,
  compilePolicyList,
  concurrencyPolicy,
  POLICY_OPTIONS,
  type PolicyOptions,
  refuseBesidePolicies,
  withCarry,
} from './policy'
import { longestWait, primaryIndex } from './primary'
import { readStore } from './read-store'
import type { Cost, Lease, Policy, PolicyResult, Store, TakeBuffer, TakeResult } from './store'
import { createdInsideRequest, emitWarning, warnIfBareMilliseconds } from './warnings'

export type { KeyedCost }

/**
 * What a keyed limiter counts: one policy at the top level, several in `policies`, or a
 * bulkhead's `max`. What `reconfigure` takes.
 */
export interface KeyedPolicyOptions extends PolicyOptions {
  /** Several limits checked together, atomically; each named (given, or from its spec). */
  policies?: readonly PolicyOptions[]
  /**
   * A bulkhead per key instead: permits in flight, taken by `enter(key)`. Not with a
   * time-based policy.
   */
  max?: number
}

/** Options of {@link keyedLimiter}: one policy at the top level, or several in `policies`. */
export interface KeyedLimiterOptions<S extends Store = Store> extends KeyedPolicyOptions {
  /** Where the per-key state lives. Default: a `memoryStore()` of this limiter's own. */
  store?: S
  /**
   * Time source of the default memory store and of the reservations' time to live (a
   * `ManualClock` in tests). Default: the system clock.
   */
  clock?: Clock
  /**
   * How long a reservation may stay unsettled: after it, its estimate is given back (as
   * far as it still counts), and a settle that comes later charges the whole actual cost
   * as debt. A timer of this process (on `clock` when given): a process that dies first
   * gives nothing back early. Default `'10m'`.
   */
  reservationTtl?: Duration
}

/** One policy's part of a keyed answer. */
export interface KeyedPolicyResult {
  readonly policy: string
  readonly allowed: boolean
  /** True while the key is blocked under this policy (by a penalty or `block`). */
  readonly blocked: boolean
  readonly remaining: number
  readonly resetMs: number
  readonly retryAfterMs: number
}

/**
 * A keyed answer. The overall numbers are the most constraining policy's: the one with
 * the fewest permits left when admitted, the refusing one with the longest wait when not.
 */
export interface KeyedResult {
  /** Whether every policy admitted the call (nothing was taken when not). */
  readonly allowed: boolean
  /** The name of the policy shown. */
  readonly policy: string
  /** Permits left under the policy shown (0 while blocked). */
  readonly remaining: number
  /** True while the key is blocked under some policy (by a penalty or `block`). */
  readonly blocked: boolean
  /** Milliseconds until more quota becomes available under the policy shown (0: full). */
  readonly resetMs: number
  /** 0 when allowed; otherwise milliseconds until the call could pass (`Infinity`: never). */
  readonly retryAfterMs: number
  /** The receipt of what was taken (pass it to `refund`); undefined when refused. */
  readonly receipt: Receipt | undefined
  /** Each policy's answer, in the order configured. */
  readonly policies: readonly KeyedPolicyResult[]
}

/** What `consume` took, for `refund`: opaque. */
export interface Receipt {
  readonly key: string
}

/** Answers synchronously on a memory store, with a promise on any other. */
type Answer<S, T> = S extends MemoryStore ? T : MaybePromise<T>

/** A cost budget taken from an estimate, to be settled with the actual cost. */
export interface Reservation<S extends Store = Store> extends KeyedResult {
  /**
   * Charges the actual cost instead of the estimate: the difference is refunded (as far
   * as it still counts), or the excess charged as debt that later calls wait out. Once.
   * 0 (or a policy the actual cost does not name) is charged nothing: its estimate goes
   * back. After `reservationTtl` the estimate was given back already, so the whole actual
   * cost is charged, as a penalty. A bad cost throws and leaves the reservation open.
   * Answers the key's state after it (`allowed`: whether a cost of 1 would pass now).
   */
  settle(actual: KeyedCost): Answer<S, KeyedResult>
  /**
   * Gives the estimate back, as far as it still counts. Not after `settle`; nothing more
   * after `reservationTtl` or a first `cancel`.
   */
  cancel(): Answer<S, void>
}

/** A bulkhead slot held for a key; `release()` frees it (a second call throws). */
export interface KeyedPermit<S extends Store = Store> extends Disposable {
  readonly key: string
  release(): Answer<S, void>
}

/**
 * Limits any key, anywhere: a WebSocket message, a GraphQL resolver, a queue job, a login
 * attempt, outbound calls per tenant. Every call on a memory store answers synchronously.
 */
export interface KeyedLimiter<S extends Store = Store> {
  readonly name: string
  readonly policies: readonly Policy[]
  readonly store: S
  /** Takes `cost` for `key` from every policy, or nothing. Never throws for "limited". */
  consume(key: string, cost?: KeyedCost): Answer<S, KeyedResult>
  /** `consume`, throwing `RateLimitError` (`ERR_SLUICE_LIMITED`) when refused. */
  consumeOrThrow(key: string, cost?: KeyedCost): Answer<S, KeyedResult>
  /** Gives back what a `consume` took (all of it, or `cost`), as far as it still counts. */
  refund(receipt: Receipt, cost?: KeyedCost): Answer<S, void>
  /**
   * Takes `cost` from `key` without asking: debt that later calls wait out. Answers the
   * key's state after it, as `get` does (`allowed`: whether a cost of 1 would pass now).
   */
  penalty(key: string, cost?: KeyedCost): Answer<S, KeyedResult>
  /** Gives `cost` back to `key`, never beyond a fresh state. */
  reward(key: string, cost?: KeyedCost): Answer<S, void>
  /** Refuses `key` for `duration` (0 lifts a block), whatever its budget says. */
  block(key: string, duration: Duration): Answer<S, void>
  /** The state of `key`, taking nothing (`allowed`: whether a cost of 1 would pass now). */
  get(key: string): Answer<S, KeyedResult>
  /** Forgets `key` under this limiter's policies, blocks included. */
  delete(key: string): Answer<S, void>
  /** Takes an estimate to be settled later (`Reservation.settle`); refused takes nothing. */
  reserve(key: string, estimate: KeyedCost): Answer<S, Reservation<S>>
  /** `reserve`, throwing `RateLimitError` when refused. */
  reserveOrThrow(key: string, estimate: KeyedCost): Answer<S, Reservation<S>>
  /** A bulkhead's slot for `key` (limiters with `max`), or undefined when full. */
  enter(key: string): Answer<S, KeyedPermit<S> | undefined>
  /** The key this limiter stores for `key` (long and digest-like keys are hashed). */
  keyFor(key: string): string
  /**
   * Changes the limits while running, without resetting anyone: `options` are the whole
   * policies (as given to `keyedLimiter`, defaults for what is left out; `store`, `clock`
   * and `reservationTtl` stay), and each key's state carries over to the new spec of its
   * policy's name the next time the key is touched, as `carry` says (default
   * `'proportional'`; see `Carry`). An unnamed policy keeps the name it had (in `policies`:
   * the name at its position), so its state carries. Refused, with the old spec left
   * working: another algorithm under a name, a bulkhead made a rate limiter (or back), a
   * spec that fails validation, an unknown `carry`.
   *
   * @example
   * ```ts
   * limiter.reconfigure({ limit: 120, window: '1m' }, { carry: 'proportional' })
   * ```
   */
  reconfigure(options: KeyedPolicyOptions, how?: ReconfigureOptions): void
}

const OPTIONS = [...POLICY_OPTIONS, 'policies', 'max', 'store', 'clock', 'reservationTtl']

/** Names other libraries use, and what to write instead. */
const HINTS: Readonly<Record<string, string>> = {
  points: 'use "limit"',
  duration:
    'use "window": rate-limiter-flexible counts seconds, sluice takes \'60s\' or milliseconds',
  blockDuration: 'use "block: { for }"',
  keyPrefix: 'give the limiter a "name"; the store keeps policies apart by name and spec',
  storeClient: 'use "store", e.g. redisStore({ client })',
  execEvenly: "use algorithm: 'leaky-bucket' (strict pacing)",
  insuranceLimiter: "use the store's onError: 'local'",
}

/**
 * A limiter for any key, without HTTP: the same policies, penalties, stores and events as
 * the middleware (`rate-limiter-flexible`'s `consume(key, points)`, with receipts). Costs
 * may differ per policy (`{ requests: 1, tokens: 1200 }`), and a cost known only
 * afterwards is reserved from an estimate and settled with the actual cost.
 *
 * @example
 * ```ts
 * const logins = keyedLimiter({ limit: 5, window: '15m', block: { for: '1h', after: 2 } })
 * const { allowed, retryAfterMs } = logins.consume(`${username}:${ip}`)
 * if (!allowed) return reply(429, { retryInSeconds: Math.ceil(retryAfterMs / 1000) })
 * if (!passwordMatches) logins.penalty(`${username}:${ip}`, 1)
 * ```
 */
export function keyedLimiter<S extends Store = MemoryStore>(
  options: KeyedLimiterOptions<S>,
): KeyedLimiter<S> {
  return new Keyed(options) as unknown as KeyedLimiter<S>
}

const FACTORY = 'keyedLimiter'

/** The policies of a keyed limiter's options (constructor's or `reconfigure`'s). */
function compileLimiter(given: KeyedPolicyOptions, factory: string): Policy[] {
  const { policies, max } = given
  if (max !== undefined) {
    for (const key of [...POLICY_OPTIONS, 'policies']) {
      if (key !== 'name' && (given as Record<string, unknown>)[key] !== undefined) {
        throw typeError(
          factory,
          key,
          'cannot be combined with "max" (a bulkhead per key)',
          (given as Record<string, unknown>)[key],
        )
      }
    }
    return [concurrencyPolicy(given.name, readPositiveInteger(factory, 'max', max))]
  }
  if (policies !== undefined) {
    refuseBesidePolicies(factory, given)
    return compilePolicyList(policies, factory)
  }
  const single: PolicyOptions = {}
  for (const key of POLICY_OPTIONS) {
    const value = (given as Record<string, unknown>)[key]
    if (value !== undefined) (single as Record<string, unknown>)[key] = value
  }
  return [compilePolicy(single, factory)]
}

const RECONFIGURE_OPTIONS = [...POLICY_OPTIONS, 'policies', 'max']

class Keyed implements KeyedLimiter<Store> {
  name: string
  policies: readonly Policy[]
  readonly store: Store
  readonly core: KeyedCore
  readonly #ttlMs: number
  /** The clock the reservations' time to live runs on, when one was given. */
  readonly #clock: Clock | undefined
  readonly #slots: boolean
  /**
   * The answer a memory store fills for a take under one policy, reused by every such
   * take: the store writes it before it returns, and {@link Answered} copies what it
   * keeps, so `consume` allocates nothing but its answer. Undefined for any other store
   * (one answering later could fill it while another call reads it).
   */
  readonly #buffer: TakeBuffer | undefined

  constructor(options: KeyedLimiterOptions) {
    const given = readOptions(FACTORY, options, OPTIONS, HINTS) as KeyedLimiterOptions
    const { store } = given
    this.policies = compileLimiter(given, FACTORY)
    this.#slots = given.max !== undefined
    const clock = readClock(FACTORY, 'clock', given.clock)
    this.store = store === undefined ? memoryStore({ clock }) : readStore(FACTORY, 'store', store)
    this.core = new KeyedCore(this.store)
    this.#buffer = isMemoryStore(this.store) ? { allowed: false, results: [] } : undefined
    this.#ttlMs = readDuration(FACTORY, 'reservationTtl', given.reservationTtl, '10m')
    warnIfBareMilliseconds(FACTORY, 'reservationTtl', given.reservationTtl)
    this.#clock = given.clock
    this.name = this.policies[0]!.name
    claimPolicies(this.store, this.policies, FACTORY)
    if (createdInsideRequest()) {
      emitWarning(
        FACTORY,
        'ERR_SLUICE_CREATED_IN_REQUEST',
        'a limiter was created while a request was being handled: a new limiter for every request starts with a full budget and limits nothing. Create it once, when the app starts, and reuse it.',
      )
    }
  }

  reconfigure(options: KeyedPolicyOptions, how?: ReconfigureOptions): void {
    const method = `${FACTORY}.reconfigure`
    const carry = readCarry(method, how)
    checkCarries(this.store, method)
    const given = readOptions(method, options, RECONFIGURE_OPTIONS, {
      ...HINTS,
      store: 'the store cannot change: make a new limiter',
      clock: 'the clock cannot change: make a new limiter',
      reservationTtl: 'reservationTtl cannot change: make a new limiter',
    }) as KeyedPolicyOptions
    if ((given.max !== undefined) !== this.#slots) {
      throw new TypeError(
        `${method}: ${this.#slots ? 'a bulkhead takes "max"' : 'a rate limiter takes no "max"'} (a limiter keeps what it counts: make a new one to change it), got ${JSON.stringify(Object.keys(given))}`,
      )
    }
    const old = this.policies
    // An unnamed policy keeps its name, so its state is carried, not started afresh.
    const named: KeyedPolicyOptions =
      given.policies === undefined
        ? { ...given, name: given.name ?? old[0]!.name }
        : {
            policies: Array.isArray(given.policies)
              ? given.policies.map((entry, i) =>
                  typeof entry === 'object' && entry !== null && entry.name === undefined && old[i]
                    ? { ...entry, name: old[i].name }
                    : entry,
                )
              : given.policies,
          }
    const next = compileLimiter(named, method)
    next.forEach((policy, i) => {
      const before = old.find((p) => p.name === policy.name)
      if (before !== undefined && before.spec.algorithm !== policy.spec.algorithm) {
        const option = given.policies === undefined ? 'algorithm' : `policies[${i}].algorithm`
        throw new TypeError(
          `${method}: "${option}" must stay '${before.spec.algorithm}' for policy "${policy.name}" (state carries over only within one algorithm: give the policy another name to start it afresh), got '${policy.spec.algorithm}'`,
        )
      }
    })
    const carried = next.map((policy) => withCarry(policy, carry))
    claimPolicies(this.store, carried, method)
    this.policies = carried
    this.name = carried[0]!.name
  }

  /**
   * The policies a call taken under `taken` settles with: the current ones of the same
   * names (so a refund after a reconfiguration does not bring the old spec back), and the
   * old ones whose names are gone.
   */
  current(taken: readonly Policy[]): readonly Policy[] {
    return livePolicies(taken, this.policies)
  }

  keyFor(key: string): string {
    return this.core.key(KEY_FOR, key)
  }

  /** A keyed cost as the store takes it: a number, or one number per policy. */
  #cost(method: string, cost: unknown, policies: readonly Policy[] = this.policies): Cost {
    return readKeyedCost(method, 'cost', policies, cost, 1)
  }

  consume(key: string, cost?: KeyedCost): MaybePromise<KeyedResult> {
    const stored = this.core.key(CONSUME, key)
    const charge = cost === undefined ? 1 : this.#cost(CONSUME, cost)
    const policies = this.policies
    const taken = this.core.take(
      stored,
      policies,
      charge,
      policies.length === 1 ? this.#buffer : undefined,
    )
    if (isPromiseLike(taken)) {
      return Promise.resolve(taken).then((t) => this.#answer(stored, charge, t))
    }
    return this.#answer(stored, charge, taken)
  }

  consumeOrThrow(key: string, cost?: KeyedCost): MaybePromise<KeyedResult> {
    return andThen(this.consume(key, cost), (result) => this.#orThrow(result))
  }

  #orThrow<R extends KeyedResult>(result: R): R {
    if (result.allowed) return result
    throw new RateLimitError('ERR_SLUICE_LIMITED', {
      limiter: result.policy,
      retryAfterMs: result.retryAfterMs,
    })
  }

  #answer(key: string, cost: Cost, taken: TakeResult): KeyedResult {
    const result = new Answered(taken, key, cost, this)
    if (rateLimitChannel.hasSubscribers) this.core.publish(key, cost, taken, true)
    return result
  }

  refund(receipt: Receipt, cost?: KeyedCost): MaybePromise<void> {
    if (!(receipt instanceof TakenReceipt) || receipt.limiter !== this) {
      throw typeError(
        `${FACTORY}.refund`,
        'receipt',
        'must be a receipt of this limiter (the receipt of a consume)',
        receipt,
      )
    }
    const taken = receipt.policies
    const charge = cost === undefined ? receipt.cost : this.#cost(`${FACTORY}.refund`, cost, taken)
    return this.core.refund(receipt.key, this.current(taken), charge, receipt.receipts)
  }

  penalty(key: string, cost?: KeyedCost): MaybePromise<KeyedResult> {
    const method = `${FACTORY}.penalty`
    const stored = this.core.key(method, key)
    const charge = cost === undefined ? 1 : this.#cost(method, cost)
    return andThen(this.core.force(stored, this.policies, charge), (results) =>
      stateOf(results, stored),
    )
  }

  reward(key: string, cost?: KeyedCost): MaybePromise<void> {
    const method = `${FACTORY}.reward`
    const stored = this.core.key(method, key)
    return this.core.refund(
      stored,
      this.policies,
      cost === undefined ? 1 : this.#cost(method, cost),
    )
  }

  block(key: string, duration: Duration): MaybePromise<void> {
    const method = `${FACTORY}.block`
    const stored = this.core.key(method, key)
    const ms = readDuration(method, 'duration', duration)
    // rate-limiter-flexible's block(key, secDuration) counts seconds: block(key, 30) is 30 ms here.
    warnIfBareMilliseconds(method, 'duration', duration)
    return this.core.block(stored, this.policies, ms)
  }

  get(key: string): MaybePromise<KeyedResult> {
    const stored = this.core.lookup(`${FACTORY}.get`, key)
    return andThen(this.core.get(stored, this.policies), (results) => stateOf(results, stored))
  }

  delete(key: string): MaybePromise<void> {
    return this.core.reset(this.core.lookup(`${FACTORY}.delete`, key), this.policies)
  }

  reserve(key: string, estimate: KeyedCost): MaybePromise<Reservation> {
    const method = `${FACTORY}.reserve`
    const stored = this.core.key(method, key)
    const charge = this.#cost(method, estimate)
    return andThen(this.core.take(stored, this.policies, charge), (taken) => {
      if (rateLimitChannel.hasSubscribers) this.core.publish(stored, charge, taken, true)
      return new Reserved(this, taken, stored, charge, this.#ttlMs, this.#clock)
    })
  }

  reserveOrThrow(key: string, estimate: KeyedCost): MaybePromise<Reservation> {
    return andThen(this.reserve(key, estimate), (reservation) => this.#orThrow(reservation))
  }

  enter(key: string): MaybePromise<KeyedPermit | undefined> {
    if (!this.#slots) {
      throw new TypeError(
        `${FACTORY}.enter: this limiter has no "max" (enter takes a bulkhead slot)`,
      )
    }
    const stored = this.core.key(`${FACTORY}.enter`, key)
    return andThen(this.core.take(stored, this.policies, 1), (taken) => {
      const lease = taken.results[0]?.lease
      return taken.allowed && lease !== undefined ? new Held(this, stored, lease) : undefined
    })
  }
}

const CONSUME = `${FACTORY}.consume`
const KEY_FOR = `${FACTORY}.keyFor`

/** A key's state as a keyed answer (`get`, `penalty`, `settle`): `allowed` for a cost of 1. */
function stateOf(results: readonly PolicyResult[], key: string): KeyedResult {
  let allowed = true
  for (const r of results) if (!r.allowed) allowed = false
  return new Answered({ allowed, results }, key, 1)
}

class TakenReceipt implements Receipt {
  constructor(
    readonly limiter: Keyed,
    readonly key: string,
    readonly cost: Cost,
    readonly receipts: readonly (number | undefined)[],
    /** The policies it was taken under (the limiter's may have been reconfigured since). */
    readonly policies: readonly Policy[],
  ) {}
}

/**
 * A store's answer as a keyed one: the overall fields from the policy that constrains
 * most. What it keeps is copied out of the store's answer, which may be a buffer the
 * next take fills again; the receipt and the per-policy list are made when first read.
 */
class Answered implements KeyedResult {
  readonly allowed: boolean
  readonly policy: string
  readonly remaining: number
  readonly blocked: boolean
  readonly resetMs: number
  readonly retryAfterMs: number
  /** Set for the answer of a take: it has a receipt when admitted. */
  readonly #limiter: Keyed | undefined
  readonly #key: string
  readonly #cost: Cost
  /**
   * Several policies: the store's results (never a reused buffer). One policy: undefined,
   * its numbers being the overall ones, with its policy and receipt kept apart.
   */
  readonly #results: readonly PolicyResult[] | undefined
  readonly #first: Policy
  readonly #firstReceipt: number | undefined
  #receipt: Receipt | undefined
  #policies: readonly KeyedPolicyResult[] | undefined

  constructor(taken: TakeResult, key: string, cost: Cost, limiter?: Keyed) {
    const { allowed, results } = taken
    this.allowed = allowed
    this.#limiter = allowed ? limiter : undefined
    this.#key = key
    this.#cost = cost
    if (results.length === 1) {
      const only = results[0]!
      this.policy = only.policy.name
      this.remaining = only.remaining
      this.blocked = only.blocked === true
      this.resetMs = only.resetMs
      this.retryAfterMs = allowed ? 0 : only.retryAfterMs
      this.#results = undefined
      this.#first = only.policy
      this.#firstReceipt = only.receipt
      return
    }
    const shown = results[primaryIndex(results, allowed)]!
    this.policy = shown.policy.name
    this.remaining = shown.remaining
    this.blocked = results.some((r) => r.blocked === true)
    this.resetMs = shown.resetMs
    this.retryAfterMs = allowed ? 0 : longestWait(results)
    this.#results = results
    this.#first = shown.policy
    this.#firstReceipt = undefined
  }

  get receipt(): Receipt | undefined {
    const limiter = this.#limiter
    if (limiter === undefined) return undefined
    if (this.#receipt === undefined) {
      const results = this.#results
      this.#receipt =
        results === undefined
          ? new TakenReceipt(limiter, this.#key, this.#cost, [this.#firstReceipt], [this.#first])
          : new TakenReceipt(
              limiter,
              this.#key,
              this.#cost,
              results.map((r) => r.receipt),
              results.map((r) => r.policy),
            )
    }
    return this.#receipt
  }

  get policies(): readonly KeyedPolicyResult[] {
    if (this.#policies === undefined) {
      const results = this.#results
      this.#policies =
        results === undefined
          ? [
              {
                policy: this.policy,
                allowed: this.allowed,
                blocked: this.blocked,
                remaining: this.remaining,
                resetMs: this.resetMs,
                retryAfterMs: this.retryAfterMs,
              },
            ]
          : results.map((r) => ({
              policy: r.policy.name,
              allowed: r.allowed,
              blocked: r.blocked === true,
              remaining: r.remaining,
              resetMs: r.resetMs,
              retryAfterMs: r.retryAfterMs,
            }))
    }
    return this.#policies
  }
}

/**
 * A reservation: the take of an estimate, settled once or cancelled. `expired`: its time
 * to live passed unsettled, so its estimate was given back; a settle then charges the
 * whole actual cost as debt.
 */
type ReservationState = 'open' | 'settled' | 'cancelled' | 'expired'

/** A reservation: the take of an estimate, settled once or cancelled (after `ttl` at most). */
class Reserved extends Answered implements Reservation {
  readonly #limiter: Keyed
  readonly #key: string
  readonly #estimate: Cost
  readonly #receipts: readonly (number | undefined)[]
  readonly #policies: readonly Policy[]
  #state: ReservationState
  /** Stops the time to live once the reservation is settled or cancelled. */
  #stop: (() => void) | undefined

  constructor(
    limiter: Keyed,
    taken: TakeResult,
    key: string,
    estimate: Cost,
    ttlMs: number,
    clock: Clock | undefined,
  ) {
    super(taken, key, estimate, limiter)
    this.#limiter = limiter
    this.#key = key
    this.#estimate = estimate
    this.#receipts = taken.results.map((r) => r.receipt)
    this.#policies = taken.results.map((r) => r.policy)
    this.#state = taken.allowed ? 'open' : 'cancelled'
    if (!taken.allowed) return
    // Never settled (its holder failed, or is still streaming): the estimate goes back
    // after `ttl`, on the limiter's clock when it was given one (a ManualClock in tests),
    // else on a timer that keeps no process alive. Either lives in this process only.
    const expire = () => {
      if (this.#state === 'open') this.#expire()
    }
    if (clock !== undefined) {
      const stop = new AbortController()
      clock.sleep(ttlMs, stop.signal).then(expire, () => {})
      this.#stop = () => stop.abort()
    } else {
      const timer = setTimeout(expire, ttlMs)
      timer.unref?.()
      this.#stop = () => clearTimeout(timer)
    }
  }

  /** The time to live passed: the estimate goes back; nobody is left to tell of a failure. */
  #expire(): void {
    this.#state = 'expired'
    const report = (error: unknown) =>
      emitWarning(
        FACTORY,
        'ERR_SLUICE_REFUND_FAILED',
        `the estimate of a reservation of "${this.#key}" left unsettled past its reservationTtl could not be given back: ${String(error)}`,
      )
    try {
      const refunded = this.#refundEstimate()
      if (isPromiseLike(refunded)) Promise.resolve(refunded).then(undefined, report)
    } catch (error) {
      report(error)
    }
  }

  #refundEstimate(): MaybePromise<void> {
    const limiter = this.#limiter
    return limiter.core.refund(
      this.#key,
      limiter.current(this.#policies),
      this.#estimate,
      this.#receipts,
    )
  }

  /** Throws unless the reservation may still be settled (`settle`) or cancelled. */
  #check(method: 'settle' | 'cancel'): void {
    const state = this.#state
    if (state === 'open' || (state === 'expired' && method === 'settle')) return
    const why = this.allowed ? `it was already ${state}` : 'it was refused: nothing was reserved'
    throw new Error(
      `${FACTORY}: Reservation.${method}() on a reservation of "${this.#key}" failed: ${why}`,
    )
  }

  settle(actual: KeyedCost): MaybePromise<KeyedResult> {
    this.#check('settle')
    const limiter = this.#limiter
    const policies = limiter.current(this.#policies)
    // Checked before anything changes: a bad argument leaves the reservation as it was.
    const real = readKeyedCost(`${FACTORY}: Reservation.settle`, 'actual', policies, actual, 0)
    const late = this.#state === 'expired'
    this.#state = 'settled'
    this.#stop?.()
    const key = this.#key
    // Past its time to live the estimate was given back: the whole actual cost is owed.
    const after = late
      ? limiter.core.force(key, policies, real)
      : limiter.core.settle(key, policies, this.#estimate, real, this.#receipts, true)
    return andThen(after, (results) => stateOf(results!, key))
  }

  cancel(): MaybePromise<void> {
    if (this.allowed && (this.#state === 'cancelled' || this.#state === 'expired')) return
    this.#check('cancel')
    this.#state = 'cancelled'
    this.#stop?.()
    return this.#refundEstimate()
  }
}

/** A bulkhead slot of a keyed limiter. */
class Held implements KeyedPermit {
  readonly key: string
  #limiter: Keyed | undefined
  readonly #lease: Lease

  constructor(limiter: Keyed, key: string, lease: Lease) {
    this.#limiter = limiter
    this.key = key
    this.#lease = lease
  }

  release(): MaybePromise<void> {
    const limiter = this.#limiter
    if (limiter === undefined) {
      throw new Error(`${FACTORY}: the permit of "${this.key}" was already released`)
    }
    this.#limiter = undefined
    return limiter.core.release(this.key, limiter.policies[0]!, this.#lease)
  }

  // After an explicit release this is a no-op, so `using` plus an early release is safe.
  [Symbol.dispose](): void {
    if (this.#limiter !== undefined) void this.release()
  }
}
