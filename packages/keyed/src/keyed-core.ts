import { costAt } from './call-checks'
import { rateLimitChannel } from './events'
import { checkKey, lookupKey, storedKey } from './key'
import { andThen, type MaybePromise } from './maybe-promise'
import { longestWait, primaryIndex } from './primary'
import type { Cost, Lease, Policy, PolicyResult, Store, TakeBuffer, TakeResult } from './store'

/**
 * The one keyed path: what `keyedLimiter` and the HTTP middleware's engine both run for a
 * key. Each decides which policies a call is under (a keyed limiter's own, a request's)
 * and how to answer (a `KeyedResult`, a `Decision` with headers); the key's stored form,
 * the store calls (take, refund, settle, force, block, release, get, reset) and the
 * `sluice:rate-limit` event are made here, once.
 *
 * @example
 * ```ts
 * const core = new KeyedCore(memoryStore())
 * const key = core.key('keyedLimiter.consume', 'user-7')
 * const taken = core.take(key, policies, 1)
 * if (rateLimitChannel.hasSubscribers) core.publish(key, 1, taken as TakeResult, true)
 * ```
 */
export class KeyedCore {
  readonly store: Store

  constructor(store: Store) {
    this.store = store
  }

  /**
   * The stored form of a key a call is given to count under (`consume`, `reserve`,
   * `penalty`, `reward`, `block`, `keyFor`): a non-empty string, long keys as their digest,
   * and a key that reads like a digest hashed too (a client must not forge another's).
   */
  key(method: string, key: unknown): string {
    checkKey(method, key)
    return storedKey(key)
  }

  /**
   * The stored form of a key an operator hands over to look at or forget (`get`,
   * `delete`, a middleware's `resetKey`): as {@link KeyedCore.key}, except that a key in
   * the digest form (what `keyFor`, the decisions and the events show for a long key) is
   * taken as already stored.
   */
  lookup(method: string, key: unknown): string {
    checkKey(method, key)
    return lookupKey(key)
  }

  take(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    into?: TakeBuffer,
  ): MaybePromise<TakeResult> {
    return this.store.take(key, policies, cost, into)
  }

  refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts?: readonly (number | undefined)[],
  ): MaybePromise<void> {
    return this.store.refund(key, policies, cost, receipts)
  }

  /**
   * Charges `actual` instead of the `estimate` a take charged (with `receipts`): refunds
   * what the actual cost leaves of it (as far as it still counts), then forces what the
   * actual cost exceeds (debt). Answers each policy's state after it when something was
   * forced, or when `answer` asks for it (a store read), else undefined.
   */
  settle(
    key: string,
    policies: readonly Policy[],
    estimate: Cost,
    actual: Cost,
    receipts: readonly (number | undefined)[] | undefined,
    answer: boolean,
  ): MaybePromise<readonly PolicyResult[] | undefined> {
    const n = policies.length
    let back: number[] | undefined
    let more: number[] | undefined
    for (let i = 0; i < n; i++) {
      const diff = costAt(actual, i) - costAt(estimate, i)
      if (diff < 0) {
        back ??= new Array<number>(n).fill(0)
        back[i] = -diff
      } else if (diff > 0) {
        more ??= new Array<number>(n).fill(0)
        more[i] = diff
      }
    }
    // One call where the store can (a round trip on Redis), else a refund and a force.
    const store = this.store
    if (store.settle !== undefined && (back !== undefined || more !== undefined)) {
      const none = (): number[] => new Array<number>(n).fill(0)
      return store.settle(key, policies, back ?? none(), more ?? none(), receipts)
    }
    const refunded = back === undefined ? undefined : store.refund(key, policies, back, receipts)
    const after = (): MaybePromise<readonly PolicyResult[] | undefined> => {
      if (more !== undefined) return store.force(key, policies, more)
      return answer ? store.get(key, policies) : undefined
    }
    return andThen(refunded, after)
  }

  /**
   * Takes `cost` whether it fits or not (a penalty, a settle past its reservation's time
   * to live); a cost of 0 for every policy takes nothing and reads the state.
   */
  force(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
  ): MaybePromise<readonly PolicyResult[]> {
    if (cost === 0 || (typeof cost !== 'number' && cost.every((c) => c === 0))) {
      return this.store.get(key, policies)
    }
    return this.store.force(key, policies, cost)
  }

  block(key: string, policies: readonly Policy[], ms: number): MaybePromise<void> {
    return this.store.block(key, policies, ms)
  }

  release(key: string, policy: Policy, lease: Lease): MaybePromise<void> {
    return this.store.release(key, policy, lease)
  }

  get(key: string, policies: readonly Policy[]): MaybePromise<readonly PolicyResult[]> {
    return this.store.get(key, policies)
  }

  /** Forgets `key` under `policies`, or under every policy of the store without them. */
  reset(key: string, policies?: readonly Policy[]): MaybePromise<void> {
    return policies === undefined ? this.store.reset(key) : this.store.reset(key, policies)
  }

  /**
   * Publishes a take on `sluice:rate-limit`: the numbers of the policy shown (the refusing
   * one with the longest wait, or the one with the fewest permits left). Call it only when
   * `rateLimitChannel.hasSubscribers`, so nobody pays for an event nobody reads.
   */
  publish(key: string, cost: Cost, taken: TakeResult, enforced: boolean): void {
    const { allowed, results } = taken
    const shown = results[primaryIndex(results, allowed)]!
    rateLimitChannel.publish({
      key,
      policy: shown.policy.name,
      allowed,
      enforced,
      remaining: shown.remaining,
      cost: totalCost(cost),
      retryAfterMs: allowed ? 0 : longestWait(results),
      policies: results.map((r) => ({
        name: r.policy.name,
        allowed: r.allowed,
        remaining: r.remaining,
      })),
    })
  }
}

/** What a cost charges in all: a number, or the sum of one per policy. */
export function totalCost(cost: Cost): number {
  if (typeof cost === 'number') return cost
  let sum = 0
  for (const c of cost) sum += c
  return sum
}

/**
 * The policies to settle a call taken under `taken` with, once the limits may have been
 * reconfigured: the `current` ones of the same names (a refund or a settle must not bring
 * an old spec back into use), and those of `taken` whose names are gone.
 */
export function livePolicies(
  taken: readonly Policy[],
  current: readonly Policy[] | undefined,
): readonly Policy[] {
  if (current === undefined || taken === current) return taken
  return taken.map((policy) => current.find((p) => p.name === policy.name) ?? policy)
}
