// The checks of a store call's arguments, made alike by every store and the keyed limiter.

import { describe } from '@sluice/core/validation'
import type { Cost, Policy } from './store'

/** A cost for one policy: a non-negative safe integer. */
function isCost(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/**
 * Checks the `cost` of a store call, the one rule every store and the keyed limiter apply:
 * a positive safe integer charged to every policy, or an array of one non-negative safe
 * integer per policy. Errors name the call (`memoryStore.take`) and the value.
 *
 * @example
 * ```ts
 * checkCost('redisStore.take', [1, 1200], 2) // ok
 * checkCost('memoryStore.take', 0, 1) // RangeError: memoryStore.take: "cost" must be a positive safe integer, got 0
 * ```
 */
export function checkCost(method: string, cost: unknown, policies: number): asserts cost is Cost {
  if (typeof cost === 'number') {
    if (cost >= 1 && Number.isSafeInteger(cost)) return
    throw new RangeError(`${method}: "cost" must be a positive safe integer, got ${describe(cost)}`)
  }
  if (!Array.isArray(cost)) {
    throw new TypeError(
      `${method}: "cost" must be a positive safe integer or one cost per policy, got ${describe(cost)}`,
    )
  }
  if (cost.length !== policies) {
    throw new RangeError(
      `${method}: "cost" must have one entry per policy (${policies}), got ${cost.length}`,
    )
  }
  const bad = cost.findIndex((entry) => !isCost(entry))
  if (bad !== -1) {
    throw new RangeError(
      `${method}: "cost[${bad}]" must be a non-negative safe integer, got ${describe(cost[bad])}`,
    )
  }
}

/** The cost charged to the policy at `index`. */
export function costAt(cost: Cost, index: number): number {
  return typeof cost === 'number' ? cost : cost[index]!
}

/**
 * Checks a block's length: a non-negative number of milliseconds (0 lifts a block).
 *
 * @example
 * ```ts
 * checkBlock('memoryStore.block', 60_000)
 * ```
 */
export function checkBlock(method: string, ms: unknown): asserts ms is number {
  if (typeof ms !== 'number' || !(ms >= 0) || ms > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(
      `${method}: "ms" must be a non-negative number of milliseconds, got ${describe(ms)}`,
    )
  }
}

/**
 * What a keyed call is charged: one number for every policy, or `{ [policyName]: n }`
 * charging each named policy its own amount (a policy not named is charged 0), e.g.
 * `{ requests: 1, tokens: 1200 }`.
 */
export type KeyedCost = number | Readonly<Record<string, number>>

/** Each policy list's names, by position: a map from a name to its index. */
const positions = new WeakMap<readonly Policy[], ReadonlyMap<string, number>>()

/**
 * A keyed cost as a store takes it (a number, or one number per policy), checked: errors
 * name `method`, and a name that is none of the policies' lists them.
 *
 * @example
 * ```ts
 * storeCost('keyedLimiter.consume', [requests, tokens], { tokens: 1200 }) // [0, 1200]
 * ```
 */
export function storeCost(
  method: string,
  policies: readonly Policy[],
  cost: unknown,
  /** False for a settle's actual cost, which may be nothing at all. */
  chargesSomething = true,
): Cost {
  if (typeof cost === 'number') {
    checkCost(method, cost, policies.length)
    return cost
  }
  if (typeof cost !== 'object' || cost === null || Array.isArray(cost)) {
    throw new TypeError(
      `${method}: "cost" must be a positive integer or { [policyName]: number }, got ${describe(cost)}`,
    )
  }
  let names = positions.get(policies)
  if (names === undefined) {
    names = new Map(policies.map((policy, i) => [policy.name, i]))
    positions.set(policies, names)
  }
  const costs = new Array<number>(policies.length).fill(0)
  for (const [name, value] of Object.entries(cost)) {
    const index = names.get(name)
    if (index === undefined) {
      throw new TypeError(
        `${method}: "cost" names no policy: ${describe(name)} (policies: ${policies.map((p) => `"${p.name}"`).join(', ')})`,
      )
    }
    costs[index] = value as number
  }
  checkCost(method, costs, policies.length)
  if (chargesSomething && costs.every((c) => c === 0)) {
    throw new RangeError(
      `${method}: "cost" must charge at least one policy (policies: ${policies.map((p) => `"${p.name}"`).join(', ')}), got ${describe(cost)}`,
    )
  }
  return costs
}
