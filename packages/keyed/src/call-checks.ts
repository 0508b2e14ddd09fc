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
 * A keyed cost as a store takes it (a number, or one number per policy), checked by the
 * one rule of every keyed call: a safe integer of at least `least` charged to every
 * policy, or `{ [policyName]: n }` (a policy not named is charged 0) charging at least one
 * policy when `least` is 1. `least` is 0 only for an actual cost a settle charges, which
 * may be nothing at all (an abandoned job): then the number 0 comes back, which no store
 * takes (the settle computes what to refund and force from it). Errors name `method`,
 * the `option` (`cost`, or a settle's `actual`) and the value; with `returned`, the
 * option is a function and its answer was wrong ("must return ..."); a name that is
 * none of the policies' lists them.
 *
 * @example
 * ```ts
 * readKeyedCost('keyedLimiter.consume', 'cost', [requests, tokens], { tokens: 1200 }, 1) // [0, 1200]
 * readKeyedCost('keyedLimiter.consume', 'cost', [requests], 0, 1) // RangeError: keyedLimiter.consume: "cost" must be a positive safe integer, got 0
 * ```
 */
export function readKeyedCost(
  method: string,
  option: string,
  policies: readonly Policy[],
  cost: unknown,
  least: 0 | 1,
  returned = false,
): Cost {
  if (typeof cost === 'number' && cost >= least && Number.isSafeInteger(cost)) return cost
  if (typeof cost !== 'object' || cost === null || Array.isArray(cost)) {
    const positive = least === 1 ? 'positive' : 'non-negative'
    if (returned) {
      throw new TypeError(
        `${method}: "${option}" must return a ${positive} integer or { [policyName]: number }, got ${describe(cost)}`,
      )
    }
    if (typeof cost === 'number') {
      throw new RangeError(
        `${method}: "${option}" must be a ${positive} safe integer, got ${describe(cost)}`,
      )
    }
    throw new TypeError(
      `${method}: "${option}" must be a ${positive} integer or { [policyName]: number }, got ${describe(cost)}`,
    )
  }
  let names = positions.get(policies)
  if (names === undefined) {
    names = new Map(policies.map((policy, i) => [policy.name, i]))
    positions.set(policies, names)
  }
  const list = () => policies.map((p) => `"${p.name}"`).join(', ')
  const costs = new Array<number>(policies.length).fill(0)
  for (const [name, value] of Object.entries(cost)) {
    const index = names.get(name)
    if (index === undefined) {
      throw new TypeError(
        `${method}: "${option}" names no policy: ${describe(name)} (policies: ${list()})`,
      )
    }
    if (!isCost(value)) {
      throw new RangeError(
        `${method}: "${option}.${name}" must be a non-negative safe integer, got ${describe(value)}`,
      )
    }
    costs[index] = value
  }
  if (least === 1 && costs.every((c) => c === 0)) {
    throw new RangeError(
      `${method}: "${option}" must charge at least one policy (policies: ${list()}), got ${JSON.stringify(cost)}`,
    )
  }
  return costs
}
