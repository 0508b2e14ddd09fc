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
  /** Every policy compiled so far (for inspection): the fixed ones, or those met since. */
  readonly known = new Map<string, Policy>()
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
    for (const policy of this.fixed ?? []) this.known.set(policy.id, policy)
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
      for (const policy of policies) {
        if (this.known.size < MAX_COMPILED) this.known.set(policy.id, policy)
      }
    }
    if (typeof value === 'object' && value !== null) this.#byArray.set(value, policies)
    return policies
  }
}
