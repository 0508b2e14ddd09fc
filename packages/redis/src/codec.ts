import { micros, mulDivMod, PAIR, slotCap } from '@sluice/core/internal'
import type { Lease, Policy, PolicyResult } from '@sluice/keyed'
import { RedisStoreError } from './errors'
import { policySuffix } from './keys'
import { FIXED_WINDOW, GCRA, GENERAL, type Script, SLIDING_WINDOW } from './scripts'

// The protocol between the store and its scripts (src/lua/*.lua): how a policy travels
// as arguments (made once per policy), and how each reply becomes results. The scripts
// are ports of @sluice/core's kernels and answer with the numbers the kernels report
// (waits in whole microseconds); the results are built here as the memory store builds
// them, so every field is the same.

// A token or leaky bucket's key lives up to eight intervals (at least 1 s, at most a
// minute) past the moment it is full again, so that a busy key moves its expiry once in
// a while rather than on every take.
const GRACE_INTERVALS = 8
const GRACE_MIN_MS = 1_000
const GRACE_MAX_MS = 60_000

/** How one policy travels to the scripts: made once per policy and cached by the store. */
export interface PolicyPlan {
  readonly policy: Policy
  /** What follows the client key's tag in the name of this policy's key. */
  readonly suffix: string
  readonly concurrency: boolean
  /** The policy's thirteen arguments to the general script. */
  readonly general: readonly string[]
  /** The one-policy script that takes for it, when there is one, and its arguments after time and cost. */
  readonly single: { readonly script: Script; readonly args: readonly string[] } | undefined
}

/**
 * Encodes a policy for the scripts: the numbers the kernel derives from its spec (the
 * window in microseconds, τ in whole microseconds and ticks, the gcd of limit and window,
 * a sliding window's slot cap), worked out once. Refuses only a window under a
 * microsecond, the kernels' unit.
 *
 * @example
 * ```ts
 * planPolicy(policy, 60_000).general // ['f', '100', '60000000', '0', '0', '0', '0', '0', '0', '60000', '0', '0', 'proportional']
 * ```
 */
export function planPolicy(policy: Policy, leaseTtlMs: number): PolicyPlan {
  const { spec, block } = policy
  const suffix = policySuffix(policy)
  if (spec.algorithm === 'concurrency') {
    return {
      policy,
      suffix,
      concurrency: true,
      general: ['c', spec.max, leaseTtlMs, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0].map(String),
      single: undefined,
    }
  }
  const window = windowMicros(policy)
  const penalty = [policy.windowMs, block?.forMs ?? 0, block?.after ?? 0]
  let params: number[]
  let script: Script | undefined
  switch (spec.algorithm) {
    case 'fixed-window':
      params = [spec.limit, window]
      script = FIXED_WINDOW
      break
    case 'sliding-window':
      params = [spec.limit, window, spec.slots, slotCap(spec.limit)]
      script = SLIDING_WINDOW
      break
    case 'token-bucket':
    case 'leaky-bucket':
    case 'warm-up': {
      const capacity = spec.algorithm === 'leaky-bucket' ? 1 : spec.capacity
      const warmUp = spec.algorithm === 'warm-up' ? micros(spec.warmUp) : 0
      // τ = capacity·T in ticks of 1/limit µs, as whole microseconds and ticks.
      mulDivMod(capacity, window, spec.limit)
      const grace = Math.ceil(
        Math.min(
          GRACE_MAX_MS,
          Math.max(GRACE_MIN_MS, (GRACE_INTERVALS * window) / spec.limit / 1000),
        ),
      )
      params = [
        spec.limit,
        window,
        capacity,
        PAIR[0]!,
        PAIR[1]!,
        grace,
        warmUp,
        gcd(spec.limit, window),
      ]
      // Warm-up keeps the key's age and searches its waits: the general script.
      script = warmUp === 0 ? GCRA : undefined
      break
    }
    default:
      throw new TypeError(
        `redisStore: policy "${policy.name}" has an unknown algorithm ${JSON.stringify((spec as { algorithm: unknown }).algorithm)}`,
      )
  }
  const padded = [...params, ...new Array<number>(8 - params.length).fill(0)]
  // The state carries over to a changed spec of its name (lib/record.lua): the mode travels
  // last, in the general script's arguments and in the one-policy script's.
  const carry = policy.carry ?? 'proportional'
  return {
    policy,
    suffix,
    concurrency: false,
    general: [
      spec.algorithm === 'fixed-window' ? 'f' : spec.algorithm === 'sliding-window' ? 's' : 'g',
      ...padded,
      ...penalty,
      carry,
    ].map(String),
    // A penalty counts refusals: the general script.
    single:
      script === undefined || block !== undefined
        ? undefined
        : {
            script,
            // The one-policy GCRA script has no warm-up: its arguments skip it.
            args: [
              ...(script === GCRA ? [...params.slice(0, 6), params[7]!] : params),
              policy.windowMs,
              carry,
            ].map(String),
          },
  }
}

/** The greatest common divisor of two positive safe integers (as the GCRA kernel reduces by). */
function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b]
  return a
}

function windowMicros(policy: Policy): number {
  const us = micros(policy.windowMs)
  if (!(us >= 1)) {
    throw new RangeError(
      `redisStore: policy "${policy.name}" needs a window of at least 1 µs, got ${policy.windowMs} ms`,
    )
  }
  return us
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

/** Numbers per policy in a reply. */
const STRIDE = 6

/**
 * One policy's answer in a reply, from `at`: admitted, available, reset µs, retry µs (-1:
 * never), receipt (-1: none), blocked (0, or the ms left as text), numbers past 2^53 as
 * text, as a result built as
 * the memory store builds it. A blocked key shows 0 remaining, its reset is the first
 * permit once the block is over, and its wait at least the block.
 */
function resultAt(
  reply: readonly unknown[],
  at: number,
  policy: Policy,
  lease: Lease | undefined,
): PolicyResult {
  const allowed = reply[at] === 1
  const available = reply[at + 1] as number
  // Past 2^53 a number comes as text (a client reads an integer reply that long inexactly).
  const resetMs = Number(reply[at + 2]) / 1000
  const retry = Number(reply[at + 3])
  const retryAfterMs = retry === -1 ? Number.POSITIVE_INFINITY : retry / 1000
  const blocked = reply[at + 5]
  if (blocked !== 0) {
    const blockedMs = Number(blocked)
    return {
      policy,
      allowed,
      limit: policy.limit,
      remaining: 0,
      resetMs: Math.max(blockedMs, resetMs),
      retryAfterMs: Math.max(blockedMs, retryAfterMs),
      blocked: true,
    }
  }
  const receipt = Number(reply[at + 4])
  const limit = policy.limit
  // One literal per shape, each with exactly its fields (no spread on the hot path).
  if (lease !== undefined) {
    return { policy, allowed, limit, remaining: available, resetMs, retryAfterMs, lease }
  }
  if (receipt === -1) return { policy, allowed, limit, remaining: available, resetMs, retryAfterMs }
  return { policy, allowed, limit, remaining: available, resetMs, retryAfterMs, receipt }
}

/** EVALSHA's arguments for a one-policy take of `cost` on `key`. */
export function singleArgs(plan: PolicyPlan, key: string, time: string, cost: number): string[] {
  const { script, args } = plan.single!
  const all = ['EVALSHA', script.sha, '1', key, time, cost === 1 ? '1' : String(cost)]
  for (let i = 0; i < args.length; i++) all.push(args[i]!)
  return all
}

/** A one-policy script's reply as its result. */
export function decodeSingle(reply: unknown, plan: PolicyPlan): PolicyResult {
  if (!Array.isArray(reply) || reply.length !== STRIDE) throw unexpected(reply)
  return resultAt(reply, 0, plan.policy, undefined)
}

/** The general script's operations. */
export type GeneralOp = 'take' | 'refund' | 'force' | 'settle' | 'block' | 'get'

/** What a general call carries besides its policies and costs. */
export interface GeneralCall {
  readonly op: GeneralOp
  /** The time argument: '' for Redis's own clock. */
  readonly time: string
  /** A take's lease id ('' : none). */
  readonly leaseId?: string
  /** A take's deadline, in µs on the scripts' clock (0: none). */
  readonly deadlineUs?: number
  /** After the costs: a refund's receipts, a block's length, a settle's receipts and then its forced costs. */
  readonly extra?: readonly string[]
}

/** A refund's receipts as the general script reads them, one per policy ('' : none). */
export function receiptArgs(
  receipts: readonly (number | undefined)[] | undefined,
  policies: number,
): string[] {
  const args = new Array<string>(policies)
  for (let i = 0; i < policies; i++) {
    const receipt = receipts?.[i]
    args[i] = receipt === undefined ? '' : String(receipt)
  }
  return args
}

/** EVALSHA's arguments for the general script on `keys` (one per policy, in order). */
export function generalArgs(
  call: GeneralCall,
  keys: readonly string[],
  plans: readonly PolicyPlan[],
  costs: readonly number[],
): string[] {
  const args = [
    'EVALSHA',
    GENERAL.sha,
    String(keys.length),
    ...keys,
    call.time,
    call.op,
    call.leaseId ?? '',
    String(Math.floor(call.deadlineUs ?? 0)),
    String(plans.length),
  ]
  for (const plan of plans) for (const arg of plan.general) args.push(arg)
  for (const cost of costs) args.push(String(cost))
  if (call.extra !== undefined) for (const arg of call.extra) args.push(arg)
  return args
}

/** The keys of a general call: every policy's state. */
export function generalKeys(tag: string, plans: readonly PolicyPlan[]): string[] {
  return plans.map((plan) => tag + plan.suffix)
}

/** What the general script answered. */
export interface GeneralReply {
  /** 1: taken, 0: not taken (or not a take), -1: the take reached Redis after its deadline. */
  readonly taken: 1 | 0 | -1
  /** The scripts' clock, in microseconds. */
  readonly now: number
  readonly results: PolicyResult[]
}

/**
 * Decodes the general script's reply to a take, force or get; a lease (`leaseId`, each
 * policy's cost as its permits) is attached to the concurrency results of a take.
 */
export function decodeGeneral(
  reply: unknown,
  plans: readonly PolicyPlan[],
  costs: readonly number[],
  leaseId: string,
): GeneralReply {
  if (!Array.isArray(reply) || reply.length < 2) throw unexpected(reply)
  const taken = reply[0] as 1 | 0 | -1
  const now = reply[1] as number
  if (taken === -1) return { taken, now, results: [] }
  if (reply.length !== 2 + STRIDE * plans.length) throw unexpected(reply)
  const results = plans.map((plan, i) => {
    const lease =
      taken === 1 && plan.concurrency && costs[i]! > 0
        ? { id: leaseId, permits: costs[i]! }
        : undefined
    return resultAt(reply, 2 + STRIDE * i, plan.policy, lease)
  })
  return { taken, now, results }
}
