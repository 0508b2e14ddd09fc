import type { Carry } from '@sluice/core'
import { typeError } from '@sluice/core/validation'
import {
  compilePolicy,
  compilePolicyList,
  isPromiseLike,
  type Policy,
  type PolicyOptions,
  refuseBesidePolicies,
  withCarry,
} from '@sluice/keyed/store'

/** Middleware options that describe policies: one at the top level, or a list. */
export interface PoliciesOptions extends Omit<PolicyOptions, 'limit'> {
  /** Requests per window: a number, or a function of the request (plans, tenants). Default 100. */
  limit?: number | ((req: never) => number | Promise<number>)
  /**
   * Several limits checked together, atomically; each gets its own name (given, or made
   * from its spec). A function of the request picks them per request (plans, tenants);
   * compiled policies are cached by value.
   */
  policies?:
    | readonly PolicyOptions[]
    | ((req: never) => readonly PolicyOptions[] | Promise<readonly PolicyOptions[]>)
}

/** Most distinct policy sets a middleware keeps compiled for `limit`/`policies` functions. */
const MAX_COMPILED = 1000

/**
 * A middleware's policies: fixed at construction, or picked per request by a `limit` or
 * `policies` function (plans, tenants). Compiled policies are cached by value, so a
 * function that returns the same numbers (or the same array) for every request of a plan
 * compiles them once, not per request.
 *
 * @example
 * ```ts
 * const source = new PolicySource({ limit: (req: Req) => (req.plan === 'pro' ? 1000 : 100) }, 'rateLimit')
 * const policies = await source.resolve(req)
 * ```
 */
export class PolicySource<Req = unknown> {
  /** The policies when they do not depend on the request; otherwise `undefined`. */
  readonly fixed: readonly Policy[] | undefined
  readonly #pick: ((req: Req) => unknown) | undefined
  readonly #compile: (value: unknown) => readonly Policy[]
  readonly #byValue = new Map<unknown, readonly Policy[]>()
  readonly #byArray = new WeakMap<object, readonly Policy[]>()

  /**
   * With `carry`, every policy compiled carries a key's state written under another spec
   * of its name over that way (a reconfiguration's mode; default `'proportional'`).
   */
  constructor(options: PoliciesOptions, factory: string, carry: Carry = 'proportional') {
    const { policies, limit } = options
    const carried = (list: readonly Policy[]) => list.map((policy) => withCarry(policy, carry))
    if (policies !== undefined) {
      refuseBesidePolicies(factory, options)
      if (typeof policies === 'function') {
        this.#pick = policies as (req: Req) => unknown
        this.#compile = (value) =>
          carried(compilePolicyList(value as readonly PolicyOptions[], factory, 'policies()'))
        this.fixed = undefined
      } else {
        this.#pick = undefined
        this.#compile = () => []
        this.fixed = carried(compilePolicyList(policies, factory))
      }
    } else if (typeof limit === 'function') {
      const base = { ...options, limit: 1 } as PolicyOptions & { policies?: unknown }
      delete base.policies
      // Validated once with a stand-in limit, so a bad window fails at construction.
      compilePolicy(base, factory)
      this.#pick = limit as (req: Req) => unknown
      this.#compile = (value) => {
        if (typeof value !== 'number') {
          throw typeError(factory, 'limit', 'must return a positive integer', value)
        }
        return carried([compilePolicy({ ...base, limit: value }, factory, '')])
      }
      this.fixed = undefined
    } else {
      const single = { ...options } as PolicyOptions & { policies?: unknown }
      delete single.policies
      this.#pick = undefined
      this.#compile = () => []
      this.fixed = carried([compilePolicy(single, factory)])
    }
  }

  /** The policies for one request. */
  resolve(req: Req): readonly Policy[] | Promise<readonly Policy[]> {
    if (this.fixed !== undefined) return this.fixed
    const picked = this.#pick!(req)
    if (isPromiseLike(picked)) return Promise.resolve(picked).then((value) => this.#cached(value))
    return this.#cached(picked)
  }

  #cached(value: unknown): readonly Policy[] {
    // The same array (a plan's constant list) is the common case: no key to build.
    const byArray =
      typeof value === 'object' && value !== null ? this.#byArray.get(value) : undefined
    if (byArray !== undefined) return byArray
    const key = typeof value === 'number' ? value : JSON.stringify(value)
    let policies = this.#byValue.get(key)
    if (policies === undefined) {
      policies = this.#compile(value)
      // Oldest first out: a function returning ever new numbers cannot grow this without bound.
      if (this.#byValue.size >= MAX_COMPILED) {
        this.#byValue.delete(this.#byValue.keys().next().value)
      }
      this.#byValue.set(key, policies)
    }
    if (typeof value === 'object' && value !== null) this.#byArray.set(value, policies)
    return policies
  }
}

/** How often the policies met are looked through for those whose state is surely gone. */
const FIRST_PRUNE = 1000

/**
 * The policies a middleware whose policies depend on the request has counted under, one
 * per name (a policy's state belongs to its name; the latest spec used stands for it), for
 * `get(key)` and `policies`. Unlike the compiled cache, this is not capped at a number of
 * policies: a policy is kept while state written under it may still exist, so `get` sees
 * every plan a key may hold state under, however many plans there are. A policy is
 * dropped once every key's state under it is surely fresh again: its last use, plus three
 * windows scaled by its burst (what a take within its capacity leaves, a warm-up bucket's
 * cold intervals included), plus its block, plus any debt a settle charged. Memory then
 * follows the number of policies with live state, which the store holds anyway.
 *
 * @example
 * ```ts
 * const met = new MetPolicies()
 * met.met(policies, clock.now())
 * engine.get(key) // reads every policy of met.list()
 * ```
 */
export class MetPolicies {
  readonly #byName = new Map<string, { policy: Policy; until: number }>()
  #pruneAt = FIRST_PRUNE

  /** Records a take (or a refusal, which may count a strike) under `policies` at `now`. */
  met(policies: readonly Policy[], now: number): void {
    for (const policy of policies) {
      const entry = this.#byName.get(policy.name)
      const until = now + freshAfter(policy)
      if (entry === undefined) {
        this.#byName.set(policy.name, { policy, until })
      } else {
        entry.policy = policy
        if (until > entry.until) entry.until = until
      }
    }
    if (this.#byName.size >= this.#pruneAt) this.#prune(now)
  }

  /** Records debt forced on `policies` (`permits` each): their state lasts that much longer. */
  owe(policies: readonly Policy[], permits: readonly number[], now: number): void {
    policies.forEach((policy, i) => {
      const entry = this.#byName.get(policy.name)
      const owed = permits[i] ?? 0
      if (entry === undefined || owed === 0 || policy.windowMs === 0) return
      entry.until =
        Math.max(entry.until, now + freshAfter(policy)) + (owed * policy.windowMs) / policy.limit
    })
  }

  /** Forgets every policy met (a reconfiguration: names may stand for other specs now). */
  clear(): void {
    this.#byName.clear()
    this.#pruneAt = FIRST_PRUNE
  }

  /** Every policy met whose state may still exist, in the order first met. */
  list(): readonly Policy[] {
    return Array.from(this.#byName.values(), (entry) => entry.policy)
  }

  /** The policy met under `name`, if any. */
  named(name: string): Policy | undefined {
    return this.#byName.get(name)?.policy
  }

  #prune(now: number): void {
    for (const [name, entry] of this.#byName) if (entry.until <= now) this.#byName.delete(name)
    // Amortized: the next look waits until as many again have been met.
    this.#pruneAt = Math.max(FIRST_PRUNE, 2 * this.#byName.size)
  }
}

/**
 * How long after a take every key's state under `policy` is surely fresh again: three
 * windows, scaled by a bucket's burst (a warm-up bucket's cold interval is three times its
 * warm one), plus its block. Generous on purpose: it only bounds memory.
 */
function freshAfter(policy: Policy): number {
  const { spec } = policy
  if (spec.algorithm === 'concurrency') return Number.POSITIVE_INFINITY
  const burst = 'capacity' in spec ? Math.max(1, spec.capacity / spec.limit) : 1
  return 3 * spec.window * burst + (policy.block?.forMs ?? 0)
}
