import type { Lease, Policy, PolicyResult } from '@sluice/keyed'
import { RedisStoreError } from './errors'
import { PENALTY_SUFFIX, policySuffix } from './keys'
import { FIXED_WINDOW, GCRA, GENERAL, type Script, SLIDING_WINDOW } from './scripts'

// The protocol between the store and its scripts (src/lua/*.lua): how a policy travels
// as arguments (made once per policy), and how each reply becomes results. Every number
// a script keeps is an integer below 2^53, exact in a Lua double.

const MAX_SAFE = Number.MAX_SAFE_INTEGER
// GCRA time units, finest first: a policy counts in the finest unit for which
// capacity x window (in units) stays below 2^53, so a huge one (a million per day) counts
// in 10 us units, and beyond about 10^8 per day the policy is refused.
const UNITS_US = [1, 10, 100, 1000]
// Window (and slot) numbers travel in integer replies modulo a cycle, and are restored
// from the estimate of Redis's clock: any cycle of a few windows would do, this one
// leaves room for any clock error. Below MIN_CYCLE (limits near 2^53) replies carry the
// time instead.
const MAX_CYCLE = 2 ** 32
const MIN_CYCLE = 2 ** 16
// A token or leaky bucket's key lives up to eight intervals (at least 1 s, at most a
// minute) past the moment it is full again, so that a busy key moves its expiry once in
// a while rather than on every take.
const GRACE_INTERVALS = 8
const GRACE_MIN_US = 1_000_000
const GRACE_MAX_US = 60_000_000

/** How one policy travels to the scripts: made once per policy and cached by the store. */
export interface PolicyPlan {
  readonly policy: Policy
  /** What follows the client key's tag in the names of this policy's keys. */
  readonly suffix: string
  /** The penalty's key suffix, when the policy has a penalty. */
  readonly penaltySuffix: string | undefined
  readonly concurrency: boolean
  /** The policy's ten arguments to the general script. */
  readonly general: readonly string[]
  /** The one-policy script that takes for it, when there is one. */
  readonly single: SinglePlan | undefined
}

/** A one-policy take: its script, its arguments, and the decoding of its integer reply. */
export interface SinglePlan {
  readonly script: Script
  /** EVALSHA's arguments for a take of `cost` on `key`. */
  args(key: string, cost: string, wantTime: boolean): string[]
  /** True when integer replies cannot be decoded, so every reply must carry the time. */
  readonly alwaysTime: boolean
  /** The result of an admitted take from its integer reply and Redis's clock (estimated). */
  decode(reply: number, nowUs: number): PolicyResult
}

/**
 * Encodes a policy for the scripts: durations in integer microseconds, numbers the
 * scripts derive precomputed. Throws a `RangeError` for a policy whose numbers the
 * scripts could not keep exact.
 *
 * @example
 * ```ts
 * planPolicy(policy, 60_000_000).general // ['f', '100', '201', '60000000', '4294967296', '0', '0', '0', '0', '0']
 * ```
 */
export function planPolicy(policy: Policy, leaseTtlUs: number): PolicyPlan {
  const { spec, block } = policy
  const suffix = policySuffix(policy)
  let plan: { general: (number | string)[]; single: SinglePlan | undefined }
  switch (spec.algorithm) {
    case 'fixed-window':
      plan = fixedWindow(policy)
      break
    case 'sliding-window':
      plan = slidingWindow(policy, spec.slots)
      break
    case 'token-bucket':
      plan = gcra(policy, spec.capacity, 0)
      break
    case 'leaky-bucket':
      plan = gcra(policy, 1, 0)
      break
    case 'warm-up':
      plan = gcra(policy, spec.capacity, Math.round(spec.warmUp * 1000))
      break
    case 'concurrency':
      plan = { general: ['c', spec.max, leaseTtlUs, 0, 0, 0, 0], single: undefined }
      break
    default:
      throw new TypeError(
        `redisStore: policy "${policy.name}" has an unknown algorithm ${JSON.stringify((spec as { algorithm: unknown }).algorithm)}`,
      )
  }
  const penalty =
    block === undefined
      ? [0, 0, 0]
      : [Math.round(block.forMs * 1000), block.after, windowMicros(policy)]
  return {
    policy,
    suffix,
    penaltySuffix: block === undefined ? undefined : suffix + PENALTY_SUFFIX,
    concurrency: spec.algorithm === 'concurrency',
    general: [...plan.general, ...penalty].map(String),
    // A penalty needs its own key and the general script.
    single: block === undefined ? plan.single : undefined,
  }
}

function fixedWindow(policy: Policy): { general: (number | string)[]; single: SinglePlan } {
  const limit = policy.limit
  const windowUs = windowMicros(policy)
  const m = 2 * limit + 1
  const cycle = Math.min(MAX_CYCLE, Math.floor((MAX_SAFE - 2 * limit) / m) - 1)
  if (cycle < 2) throw tooLarge(policy, `a fixed window's limit must be below 10^15`)
  const [l, w] = [String(limit), String(windowUs)]
  return {
    general: ['f', limit, m, windowUs, cycle, 0, 0],
    single: {
      script: FIXED_WINDOW,
      // Every argument costs Redis a string to parse and a Lua string to make: the script
      // derives m and the cycle itself, and the time flag is left out unless wanted.
      args: (key, cost, wantTime) =>
        wantTime
          ? ['EVALSHA', FIXED_WINDOW.sha, '1', key, cost, l, w, '1']
          : ['EVALSHA', FIXED_WINDOW.sha, '1', key, cost, l, w],
      alwaysTime: cycle < MIN_CYCLE,
      // The state: (window number mod cycle + 1) x m + count.
      decode(reply, nowUs) {
        const used = reply % m
        const residue = Math.floor(reply / m) - 1
        const id = nearest(residue, cycle, Math.floor(nowUs / windowUs))
        const left = (id + 1) * windowUs - nowUs
        return admitted(policy, limit - used, Math.max(left, 1) / 1000, id)
      },
    },
  }
}

function slidingWindow(
  policy: Policy,
  slots: number,
): { general: (number | string)[]; single: SinglePlan } {
  const limit = policy.limit
  const windowUs = windowMicros(policy)
  if (windowUs < slots || windowUs * slots > MAX_SAFE) {
    throw tooLarge(
      policy,
      `a sliding window needs slots of at least 1 µs, and window (µs) × slots below 2^53, got ${slots} slots of ${policy.windowMs} ms`,
    )
  }
  const cycle = Math.min(MAX_CYCLE, Math.floor(MAX_SAFE / (limit + 1)))
  const [l, w, s] = [String(limit), String(windowUs), String(slots)]
  return {
    general: ['s', limit, windowUs, slots, 0, 0, 0],
    single: {
      script: SLIDING_WINDOW,
      args: (key, cost, wantTime) =>
        wantTime
          ? ['EVALSHA', SLIDING_WINDOW.sha, '1', key, cost, l, w, s, '1']
          : ['EVALSHA', SLIDING_WINDOW.sha, '1', key, cost, l, w, s],
      alwaysTime: cycle < MIN_CYCLE,
      // (generation mod cycle) x (limit + 1) + permits in the window.
      decode(reply, nowUs) {
        const used = reply % (limit + 1)
        const residue = Math.floor(reply / (limit + 1))
        const whole = Math.floor(nowUs / windowUs)
        const estimate = whole * slots + Math.floor(((nowUs - whole * windowUs) * slots) / windowUs)
        const generation = nearest(residue, cycle, estimate)
        const reset = generationStart(generation + slots + 1, windowUs, slots) - nowUs
        return admitted(policy, limit - used, Math.max(reset, 1) / 1000, generation)
      },
    },
  }
}

/** The first microsecond of slot generation `g` (the first t with floor(t·slots/window) ≥ g). */
function generationStart(g: number, windowUs: number, slots: number): number {
  const whole = Math.floor(g / slots)
  return whole * windowUs + Math.ceil(((g - whole * slots) * windowUs) / slots)
}

function gcra(
  policy: Policy,
  capacity: number,
  warmUpUs: number,
): { general: (number | string)[]; single: SinglePlan | undefined } {
  const limit = policy.limit
  const windowUs = windowMicros(policy)
  const largest = Math.max(capacity, limit, 3)
  const unit = UNITS_US.find((u) => windowUs % u === 0 && largest * (windowUs / u) <= MAX_SAFE)
  if (unit === undefined) {
    throw tooLarge(
      policy,
      `${largest} × window must be at most 2^53 µs (a window of whole milliseconds allows about 10^8 per day), got ${largest} per ${policy.windowMs} ms`,
    )
  }
  const windowUnits = windowUs / unit
  const tau = capacity * windowUnits
  const graceUs = Math.min(
    GRACE_MAX_US,
    Math.max(GRACE_MIN_US, (GRACE_INTERVALS * windowUs) / limit),
  )
  const grace = Math.ceil(graceUs / unit)
  const [l, w, c, u] = [String(limit), String(windowUnits), String(capacity), String(unit)]
  return {
    general: ['g', limit, windowUnits, capacity, unit, grace, warmUpUs],
    // Warm-up keeps the key's age too: the general script.
    single:
      warmUpUs !== 0
        ? undefined
        : {
            script: GCRA,
            // The script works out the grace itself, when it moves the expiry.
            args: (key, cost, wantTime) =>
              wantTime
                ? ['EVALSHA', GCRA.sha, '1', key, cost, l, w, c, u, '1']
                : ['EVALSHA', GCRA.sha, '1', key, cost, l, w, c, u],
            alwaysTime: false,
            // The debt after the take, in ticks of 1/limit unit.
            decode(debt, nowUs) {
              const owedUs = (debt * unit) / limit
              return admitted(
                policy,
                Math.floor((tau - debt) / windowUnits),
                (Math.ceil(debt / limit) * unit) / 1000,
                nowUs + owedUs,
              )
            },
          },
  }
}

/** The value ≡ `residue` (mod `cycle`) nearest to `estimate`. */
function nearest(residue: number, cycle: number, estimate: number): number {
  return residue + cycle * Math.round((estimate - residue) / cycle)
}

function admitted(
  policy: Policy,
  remaining: number,
  resetMs: number,
  receipt: number,
): PolicyResult {
  return {
    policy,
    allowed: true,
    limit: policy.limit,
    remaining,
    resetMs,
    retryAfterMs: 0,
    receipt,
  }
}

function windowMicros(policy: Policy): number {
  const us = Math.round(policy.windowMs * 1000)
  if (!(us >= 1)) {
    throw new RangeError(
      `redisStore: policy "${policy.name}" needs a window of at least 1 µs, got ${policy.windowMs} ms`,
    )
  }
  return us
}

function tooLarge(policy: Policy, why: string): RangeError {
  return new RangeError(`redisStore: policy "${policy.name}" is too large to count exactly: ${why}`)
}

/** The member of a lease in a concurrency policy's sorted set. */
export function leaseMember(lease: Lease): string {
  return `${lease.permits}:${lease.id}`
}

function unexpected(reply: unknown): RedisStoreError {
  return new RedisStoreError(
    'ERR_SLUICE_REDIS',
    `redisStore: unexpected script reply ${JSON.stringify(reply)}`,
  )
}

/**
 * A one-policy script's reply in its long form, `{admitted, remaining, reset us, retry us
 * (-1: never), receipt, now us}`, as a result and Redis's clock.
 */
export function decodeSingle(
  reply: unknown,
  policy: Policy,
): { result: PolicyResult; now: number } {
  if (!Array.isArray(reply) || reply.length !== 6) throw unexpected(reply)
  const [allowed, remaining, reset, retry, receipt, now] = reply as number[]
  const result: PolicyResult =
    allowed === 1
      ? admitted(policy, remaining!, reset! / 1000, receipt!)
      : {
          policy,
          allowed: false,
          limit: policy.limit,
          remaining: remaining!,
          resetMs: reset! / 1000,
          retryAfterMs: retry === -1 ? Number.POSITIVE_INFINITY : retry! / 1000,
        }
  return { result, now: now! }
}

/** The general script's operations. */
export type GeneralOp = 'take' | 'refund' | 'get'

/**
 * EVALSHA's arguments for the general script: `keys` are the state keys, in policy order,
 * then the penalty keys (see {@link generalKeys}).
 */
export function generalArgs(
  op: GeneralOp,
  keys: readonly string[],
  plans: readonly PolicyPlan[],
  cost: number,
  leaseId: string,
  deadlineUs: number,
  receipts?: readonly (number | undefined)[],
): string[] {
  const args = [
    'EVALSHA',
    GENERAL.sha,
    String(keys.length),
    ...keys,
    op,
    // A cost above every limit is refused alike whatever its size: kept exact in Lua.
    String(Math.min(cost, MAX_SAFE)),
    leaseId,
    String(Math.floor(deadlineUs)),
    String(plans.length),
  ]
  for (const plan of plans) for (const arg of plan.general) args.push(arg)
  if (receipts !== undefined) {
    for (let i = 0; i < plans.length; i++) {
      const receipt = receipts[i]
      args.push(receipt === undefined ? '' : String(receipt))
    }
  }
  return args
}

/** The keys of a general call: every policy's state, then every penalty's. */
export function generalKeys(tag: string, plans: readonly PolicyPlan[]): string[] {
  const keys = plans.map((plan) => tag + plan.suffix)
  for (const plan of plans)
    if (plan.penaltySuffix !== undefined) keys.push(tag + plan.penaltySuffix)
  return keys
}

/** What the general script answered. */
export interface GeneralReply {
  /** 1: taken, 0: not taken (or not a take), -1: the take reached Redis after its deadline. */
  readonly taken: 1 | 0 | -1
  /** Redis's clock, in microseconds. */
  readonly now: number
  readonly results: PolicyResult[]
}

/** Decodes the general script's reply; `lease` is attached to admitted concurrency results. */
export function decodeGeneral(
  reply: unknown,
  plans: readonly PolicyPlan[],
  cost: number,
  leaseId: string,
): GeneralReply {
  if (!Array.isArray(reply) || reply.length < 2) throw unexpected(reply)
  const taken = reply[0] as 1 | 0 | -1
  const now = reply[1] as number
  if (taken === -1) return { taken, now, results: [] }
  if (reply.length !== 2 + 6 * plans.length) throw unexpected(reply)
  const results = plans.map((plan, i): PolicyResult => {
    const at = 2 + 6 * i
    const retry = reply[at + 3] as number
    const receipt = reply[at + 4] as number
    const result: { -readonly [K in keyof PolicyResult]: PolicyResult[K] } = {
      policy: plan.policy,
      allowed: reply[at] === 1,
      limit: plan.policy.limit,
      remaining: reply[at + 1] as number,
      resetMs: (reply[at + 2] as number) / 1000,
      retryAfterMs: retry === -1 ? Number.POSITIVE_INFINITY : retry / 1000,
    }
    if (reply[at + 5] === 1) result.blocked = true
    if (taken === 1) {
      if (plan.concurrency) result.lease = { id: leaseId, permits: cost }
      else if (receipt !== -1) result.receipt = receipt
    }
    return result
  })
  return { taken, now, results }
}
