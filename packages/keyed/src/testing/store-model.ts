import {
  ALGORITHMS,
  type Algorithm,
  type LimiterSpec,
  normalizeSpec,
  RATE_ALGORITHMS,
} from '@sluice/core'
import {
  algorithmDefinition,
  micros,
  type Quota,
  type RateKernel,
  rateKernel,
} from '@sluice/core/internal'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { costAt } from '../call-checks'
import type { MaybePromise } from '../maybe-promise'
import { makePolicy } from '../policy'
import type { Cost, Lease, Policy, PolicyResult, Store } from '../store'
import { countStrike, type StrikeCount } from '../strikes'

/** The time a store under the model test decides on, and how the test moves it. */
export interface StoreModelClock {
  /** The store's time now, in milliseconds. */
  now(): MaybePromise<number>
  /** Moves the store's time forward by `ms`. */
  advance(ms: number): MaybePromise<void>
}

/** Options of {@link runStoreModel}. */
export interface StoreModelOptions {
  /** The time the store decides on. */
  clock: StoreModelClock
  /**
   * Random sequences to try, each of 1 to 40 steps on up to three keys (a `boundary` step is
   * two or three calls). Default 40.
   */
  runs?: number
  /** How long the store holds a concurrency slot nobody released (its `leaseTtl`). Default: forever. */
  leaseTtlMs?: number
  /** A fixed fast-check seed, to replay a failure. */
  seed?: number
}

/**
 * The model-based store test: random sequences of take, refund, force, block, release,
 * get, reset and resetAll, with costs (one for all policies, or one per policy) and time
 * advanced by the test, against a store and against a model made of the core kernels
 * (one kernel per key and policy, a plain map of strikes and slots); every field of every
 * result is compared: allowed, remaining, resetMs, retryAfterMs (the headers' `r` and
 * `t`), receipts, blocks and leases. Every store runs it (memory, Redis, Redis Cluster,
 * Durable Objects, Deno KV), so a store that drifts from the kernels fails here.
 *
 * Time is mostly moved to the instants where answers change, not by random lengths: the
 * resetMs or retryAfterMs a key just read, multiples of a policy's emission interval or
 * slot length, the next window or slot boundary, each 1 µs short, exact or 1 µs past; and
 * `boundary` steps take exactly what is left and then one permit at such an instant. A
 * comparison one side of a boundary gets wrong (`<` for `<=`, a floor for a ceiling) fails
 * within a few dozen runs.
 *
 * @param makeStore Called once per run; each run uses keys and policy names of its own.
 * @example
 * ```ts
 * const clock = new ManualClock()
 * runStoreModel('memoryStore', () => memoryStore({ clock }), {
 *   clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) },
 * })
 * ```
 */
export function runStoreModel(
  name: string,
  makeStore: () => Store | Promise<Store>,
  options: StoreModelOptions,
): void {
  describe(`store model: ${name}`, () => {
    it('decides exactly as the kernels do, field for field', async () => {
      let run = 0
      await fc.assert(
        fc.asyncProperty(plans, steps, async (plan, program) => {
          run++
          const tag = `model-${Date.now().toString(36)}-${run}`
          const store = await makeStore()
          const policies = plan.map((p, i) => policyOf(p, `${tag}-p${i}`))
          const model = new ModelStore(options.leaseTtlMs)
          const leases: { key: string; policy: Policy; store: Lease; model: number }[] = []
          const takes: { key: string; policies: Policy[]; receipts: (number | undefined)[] }[] = []
          // What each key read after the last step, and the last take's answer: advances
          // are chosen from them, to land on the instants where a permit frees.
          const seen: PolicyResult[][] = []
          let lastTake: readonly PolicyResult[] = []
          for (const [index, step] of program.flatMap(expand).entries()) {
            const key = `${tag}-k${step.key}`
            const chosen = pick(policies, step.policies)
            // The policy an advance or a drain aims at: for a take, one it takes from.
            const target =
              step.op === 'take'
                ? policies.indexOf(chosen[step.pick % chosen.length]!)
                : step.pick % policies.length
            if (step.op === 'advance' || (step.op === 'take' && step.before !== undefined)) {
              const at = await options.clock.now()
              const by = step.op === 'take' ? step.before! : step.advance
              await options.clock.advance(
                advanceMs(by, step.ms, target, policies, seen[step.key] ?? [], lastTake, at),
              )
            }
            const now = await options.clock.now()
            let cost: Cost = step.perPolicy ? chosen.map((_, i) => step.costs[i] ?? 0) : step.cost
            if (step.op === 'take' && step.drain !== undefined && seen[step.key] !== undefined) {
              // Exactly what each policy has left (or one more): a full bucket admits its
              // capacity and no more, an emptied one is where the next permit's instant
              // matters. (Only once the key has been read: the model reads it again here.)
              const drain = step.drain
              const left = model.get(key, chosen, now).map((r) => r.remaining + drain)
              if (left.some((n) => n > 0)) cost = left.length === 1 ? left[0]! : left
            }
            const where =
              step.op === 'resetAll'
                ? `step ${index} (resetAll)`
                : `step ${index} (${step.op} on ${key}, ${describeCost(cost)})`
            switch (step.op) {
              case 'advance':
                break
              case 'take': {
                if (typeof cost !== 'number' && cost.every((c) => c === 0)) break
                const got = await store.take(key, chosen, cost)
                const want = model.take(key, chosen, cost, now)
                lastTake = want.results
                expect(got.allowed, where).toBe(want.allowed)
                compare(got.results, want.results, where)
                got.results.forEach((result, i) => {
                  if (result.lease !== undefined) {
                    leases.push({
                      key,
                      policy: chosen[i]!,
                      store: result.lease,
                      model: want.leases[i]!,
                    })
                  }
                })
                if (got.allowed) {
                  takes.push({ key, policies: chosen, receipts: got.results.map((r) => r.receipt) })
                }
                break
              }
              case 'refund': {
                const taken = takes[step.pick % Math.max(1, takes.length)]
                if (taken === undefined) break
                const refund =
                  typeof cost === 'number' ? cost : taken.policies.map((_, i) => cost[i] ?? 0)
                const receipts = step.withReceipts ? taken.receipts : undefined
                await store.refund(taken.key, taken.policies, refund, receipts)
                model.refund(taken.key, taken.policies, refund, receipts, now)
                break
              }
              case 'force': {
                const got = await store.force(key, chosen, cost)
                compare(got, model.force(key, chosen, cost, now), where)
                break
              }
              case 'block':
                await store.block(key, chosen, step.ms)
                model.block(key, chosen, step.ms, now)
                break
              case 'release': {
                const held = leases.splice(step.pick % Math.max(1, leases.length), 1)[0]
                if (held === undefined) break
                await store.release(held.key, held.policy, held.store)
                model.release(held.key, held.policy, held.model)
                break
              }
              case 'get':
                compare(await store.get(key, chosen), model.get(key, chosen, now), where)
                break
              case 'reset':
                await store.reset(key, step.all ? undefined : chosen)
                model.reset(key, step.all ? undefined : chosen)
                if (step.all) {
                  // A reset without policies forgets every policy the store knows, this
                  // run's included; leases of the key are gone with it.
                  for (let i = leases.length - 1; i >= 0; i--) {
                    if (leases[i]!.key === key) leases.splice(i, 1)
                  }
                } else {
                  for (let i = leases.length - 1; i >= 0; i--) {
                    if (leases[i]!.key === key && chosen.includes(leases[i]!.policy)) {
                      leases.splice(i, 1)
                    }
                  }
                }
                break
              case 'resetAll':
                // Every key of every policy is forgotten: the checks below read each key
                // fresh. Leases went with them; receipts stay, so later refunds meet the
                // fresh state they must not overfill.
                await store.resetAll()
                model.resetAll()
                leases.length = 0
                break
            }
            // Every policy of every key agrees after every step, not only those called.
            for (let k = 0; k < KEYS; k++) {
              const each = `${tag}-k${k}`
              const at = await options.clock.now()
              const want = model.get(each, policies, at)
              compare(await store.get(each, policies), want, `${where}, then get ${each}`)
              seen[k] = want
            }
          }
        }),
        {
          numRuns: options.runs ?? 40,
          ...(options.seed === undefined ? {} : { seed: options.seed }),
          // Each run is a real store: shrinking replays on it, so keep the replays few.
          endOnFailure: true,
        },
      )
    }, 600_000)
  })
}

const KEYS = 3

/**
 * A policy of the plan, before it gets its run's name: an algorithm of core's registry and
 * a value for each option an algorithm may read; each takes those its entry lists.
 */
interface PlannedPolicy {
  algorithm: Algorithm
  values: Readonly<Record<string, number>>
  block: { forMs: number; after: number } | undefined
}

// Awkward rates (3 per second, 7 per 100 ms), the smallest ones, and the huge ones whose
// ticks pass 2^53 (10^10 a day).
const rate = fc.oneof(
  fc.record({
    limit: fc.integer({ min: 1, max: 6 }),
    window: fc.constantFrom(1000, 100, 3000, 7, 60_000),
  }),
  fc.constant({ limit: 7, window: 100 }),
  fc.constant({ limit: 3, window: 1000 }),
  fc.record({ limit: fc.constantFrom(1e9, 1e10), window: fc.constant(86_400_000) }),
)

/** The algorithms without a time axis (the bulkhead), which count permits in flight. */
const UNTIMED = ALGORITHMS.filter((a) => !algorithmDefinition(a).timed)

// Half the policies time-based, half counting slots: every algorithm of the registry.
const plannedPolicy: fc.Arbitrary<PlannedPolicy> = fc.oneof(
  fc
    .record({
      algorithm: fc.constantFrom(...RATE_ALGORITHMS),
      rate,
      burst: fc.constantFrom(1, 0.5, 2),
      slots: fc.integer({ min: 1, max: 5 }),
      warmUp: fc.constantFrom(0, 500, 5000),
      block: fc.option(
        fc.record({ forMs: fc.constantFrom(50, 700, 5000), after: fc.integer({ min: 1, max: 3 }) }),
        // Half with a penalty: one without takes Redis's one-policy scripts.
        { nil: undefined, freq: 2 },
      ),
    })
    .map(({ algorithm, rate, burst, slots, warmUp, block }) => ({
      algorithm,
      values: {
        limit: rate.limit,
        window: rate.window,
        capacity: Math.max(1, Math.floor(rate.limit * burst)),
        slots,
        warmUp,
      },
      block,
    })),
  fc.record({
    algorithm: fc.constantFrom(...UNTIMED),
    values: fc.record({ max: fc.integer({ min: 1, max: 3 }), maxQueue: fc.constant(0) }),
    block: fc.constant(undefined),
  }),
)

/** Four policies per run: calls use subsets of them. */
const plans = fc.array(plannedPolicy, { minLength: 4, maxLength: 4 })

const advance = fc.record({
  to: fc.constantFrom(
    'ms',
    'reset',
    'reset',
    'retry',
    'retry',
    'taken',
    'period',
    'edge',
  ) as fc.Arbitrary<AdvanceTo>,
  // One microsecond short of the instant, the instant, or one past it.
  nudge: fc.constantFrom(-1, 0, 0, 1),
  times: fc.integer({ min: 1, max: 3 }),
})

const step = fc.record({
  op: fc.constantFrom(
    'take',
    'take',
    'take',
    'take',
    'advance',
    'advance',
    'advance',
    'refund',
    'force',
    'block',
    'release',
    'get',
    'reset',
    'resetAll',
    'boundary',
    'boundary',
    'boundary',
    'boundary',
  ),
  key: fc.integer({ min: 0, max: KEYS - 1 }),
  // One policy alone half the time: one-policy calls take the stores' shortest paths.
  policies: fc.oneof(fc.constantFrom(1, 2, 4, 8), fc.integer({ min: 1, max: 15 })),
  cost: fc.oneof(
    { arbitrary: fc.integer({ min: 1, max: 4 }), weight: 3 },
    { arbitrary: fc.constant(1), weight: 2 },
    { arbitrary: fc.integer({ min: 1, max: 1e9 }), weight: 1 },
  ),
  perPolicy: fc.boolean(),
  costs: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 4, maxLength: 4 }),
  ms: fc.oneof(
    fc.integer({ min: 0, max: 120 }),
    fc.integer({ min: 0, max: 4000 }),
    fc.constantFrom(0.001, 14.286, 333.333),
  ),
  advance,
  // An advance a take makes first, aimed at a policy it takes from.
  before: fc.option(advance, { nil: undefined, freq: 2 }),
  blockFirst: fc.boolean(),
  // A boundary step's nudge: 1 µs short of the instant half the time.
  edgeNudge: fc.constantFrom(-1, -1, 0, 1),
  // A take of what each policy has left, plus this.
  drain: fc.option(fc.constantFrom(0, 0, 1), { nil: undefined, freq: 2 }),
  pick: fc.nat(),
  withReceipts: fc.boolean(),
  all: fc.boolean(),
})
// Lengths spread over 1 to 40 (fast-check's default size would keep them under 13, too
// short to empty a bucket and then wait for its next permit).
const steps = fc.array(step, { minLength: 1, maxLength: 40, size: 'max' })

/**
 * A `boundary` step is two takes on one key: the first of exactly what each policy has left,
 * the second of one permit after an advance to (or 1 µs short of, or past) the instant the
 * aimed-at policy's next permit frees; between them, a block of up to 1 ms when
 * `blockFirst` (a key that held a block can decide on another path: Redis's one-policy
 * script leaves its inline path for such a key). Any other step is itself.
 */
function expand<
  S extends {
    op: string
    ms: number
    advance: { to: AdvanceTo }
    blockFirst: boolean
    edgeNudge: number
  },
>(step: S) {
  if (step.op !== 'boundary') return [step]
  const to: AdvanceTo = step.advance.to === 'retry' ? 'retry' : 'reset'
  return [
    { ...step, op: 'take' as const, drain: 0, before: undefined },
    // A block that ends before the permit frees (at most 1 ms), so the take meets the key's
    // state and not the block.
    ...(step.blockFirst
      ? [{ ...step, op: 'block' as const, ms: Math.min(Math.max(step.ms, 0.001), 1) }]
      : []),
    {
      ...step,
      op: 'take' as const,
      drain: undefined,
      before: { ...step.advance, to, nudge: step.edgeNudge },
      cost: 1,
      perPolicy: false,
    },
  ]
}

/**
 * Where an advance goes: `ms` a random length; `reset` / `retry` the resetMs / retryAfterMs
 * a key read after the last step; `taken` the retryAfterMs of the last take (a refused cost
 * above 1); `period` `times` × the policy's emission interval (window / limit); `edge` to
 * the `times`-th next end of a slot (window / slots) or, without slots, of a window,
 * counted from the clock's zero where windows and slots start. Each is nudged by −1, 0 or
 * +1 µs.
 */
type AdvanceTo = 'ms' | 'reset' | 'retry' | 'taken' | 'period' | 'edge'

/**
 * The milliseconds an advance moves the clock by, aimed at `policies[target]` (`ms`
 * when there is nothing to aim at: a concurrency policy, no wait).
 */
function advanceMs(
  { to, nudge, times }: { to: AdvanceTo; nudge: number; times: number },
  ms: number,
  target: number,
  policies: readonly Policy[],
  seen: readonly PolicyResult[],
  lastTake: readonly PolicyResult[],
  now: number,
): number {
  let us: number | undefined
  if (to === 'reset' || to === 'retry' || to === 'taken') {
    const result = to === 'taken' ? lastTake[target % Math.max(1, lastTake.length)] : seen[target]
    const wait = to === 'reset' ? result?.resetMs : result?.retryAfterMs
    if (wait !== undefined && wait > 0 && Number.isFinite(wait)) us = micros(wait)
  } else if (to !== 'ms') {
    const spec = policies[target]!.spec
    if ('window' in spec) {
      // A length of window / parts µs, as integers (the huge rates' periods are below 1
      // µs): a `period` is the emission interval (window / limit), an `edge` ends a slot
      // (window / slots) or else a window, both counted from the clock's zero.
      const window = BigInt(micros(spec.window))
      const parts = BigInt(to === 'period' ? spec.limit : 'slots' in spec ? spec.slots : 1)
      const k = BigInt(times)
      if (to === 'period') {
        us = Number(ceilDiv(k * window, parts))
      } else {
        // The first µs of the times-th part after the one now is in.
        const at = BigInt(micros(now))
        const part = (at * parts) / window + k
        us = Number(ceilDiv(part * window, parts) - at)
      }
    }
  }
  // A debt of years (a forced cost of 10^9 at 3 a second) is not waited out: the clock,
  // shared by every run, must stay where microseconds are exact doubles (below 2^53).
  if (us === undefined || us > MAX_AIMED_US || micros(now) + us > CLOCK_HORIZON_US) return ms
  return Math.max(us + nudge, 0) / 1000
}

/** The longest aimed advance, about 6.4 days: three one-day windows fit. */
const MAX_AIMED_US = 2 ** 39
/**
 * Past this (the year 2112 on a clock that reads Unix time, 2^52 µs), advances are no
 * longer aimed: half the exact range is left for the debts a run can still run up.
 */
const CLOCK_HORIZON_US = 2 ** 52

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b
}

function pick(policies: readonly Policy[], mask: number): Policy[] {
  return policies.filter((_, i) => (mask >> i) & 1)
}

function describeCost(cost: Cost): string {
  return typeof cost === 'number' ? `cost ${cost}` : `costs [${cost.join(', ')}]`
}

/** The planned policy's spec: the values of the options its registry entry lists. */
function policyOf({ algorithm, values, block }: PlannedPolicy, name: string): Policy {
  const spec: Record<string, unknown> = { algorithm }
  for (const option of algorithmDefinition(algorithm).options) {
    if (!(option in values)) {
      throw new Error(
        `runStoreModel: the plan has no values for option "${option}" of ${algorithm}`,
      )
    }
    spec[option] = values[option]
  }
  return makePolicy(normalizeSpec(spec as unknown as LimiterSpec), name, block)
}

/** Compares a store's results with the model's, every field. */
function compare(got: readonly PolicyResult[], want: readonly PolicyResult[], where: string): void {
  expect(got.map(view), where).toEqual(want.map(view))
}

function view(result: PolicyResult) {
  return {
    policy: result.policy.name,
    allowed: result.allowed,
    limit: result.limit,
    remaining: result.remaining,
    resetMs: result.resetMs,
    retryAfterMs: result.retryAfterMs,
    // What the RateLimit headers show: `r` and `t` (seconds, rounded up).
    r: result.remaining,
    t: Math.ceil(result.resetMs / 1000),
    receipt: result.receipt,
    blocked: result.blocked === true,
    lease: result.lease === undefined ? undefined : result.lease.permits,
  }
}

interface ModelSlots {
  leases: Map<number, { permits: number; expiresAt: number }>
}

/**
 * The reference: one kernel per key and policy (row 0), strikes as plain numbers, slots as
 * a map of leases. It decides as a store must: every policy checked, then each takes, or
 * none; a refusal strikes the policies with a penalty that refused.
 */
class ModelStore {
  readonly #kernels = new Map<string, RateKernel>()
  readonly #strikes = new Map<string, StrikeCount>()
  readonly #slots = new Map<string, ModelSlots>()
  readonly #leaseTtlMs: number
  readonly #quota: Quota = { available: 0, resetMs: 0, retryAfterMs: 0, receipt: 0 }
  #lease = 0

  constructor(leaseTtlMs = Number.POSITIVE_INFINITY) {
    this.#leaseTtlMs = leaseTtlMs
  }

  /** The key's kernel under `policy`, made fresh at first sight (a warm-up key's age starts then). */
  #kernel(key: string, policy: Policy, now: number): RateKernel {
    const id = `${key}\u0000${policy.id}`
    let kernel = this.#kernels.get(id)
    if (kernel === undefined) {
      kernel = rateKernel(policy.spec as never)
      kernel.resize(1)
      kernel.clear(0, now)
      this.#kernels.set(id, kernel)
    }
    return kernel
  }

  #held(key: string, policy: Policy, now: number): { slots: ModelSlots; held: number } {
    const id = `${key}\u0000${policy.id}`
    let slots = this.#slots.get(id)
    if (slots === undefined) {
      slots = { leases: new Map() }
      this.#slots.set(id, slots)
    }
    let held = 0
    for (const [lease, { permits, expiresAt }] of slots.leases) {
      if (expiresAt <= now) slots.leases.delete(lease)
      else held += permits
    }
    return { slots, held }
  }

  #blockedFor(key: string, policy: Policy, now: number): number {
    const until = this.#strikes.get(`${key}\u0000${policy.id}`)?.until ?? 0
    return Math.max(until - now, 0)
  }

  take(key: string, policies: readonly Policy[], cost: Cost, now: number) {
    const blocked = policies.map((p) => (timed(p) ? this.#blockedFor(key, p, now) : 0))
    const admits = policies.map((p, i) => {
      const charge = costAt(cost, i)
      if (!timed(p)) return this.#held(key, p, now).held + charge <= p.limit
      return blocked[i] === 0 && this.#kernel(key, p, now).fits(0, now, charge)
    })
    const allowed = admits.every(Boolean)
    const leases: (number | undefined)[] = policies.map(() => undefined)
    if (allowed) {
      policies.forEach((p, i) => {
        const charge = costAt(cost, i)
        if (charge === 0) return
        if (timed(p)) {
          this.#kernel(key, p, now).take(0, now, charge)
        } else {
          const lease = ++this.#lease
          this.#held(key, p, now).slots.leases.set(lease, {
            permits: charge,
            expiresAt: now + this.#leaseTtlMs,
          })
          leases[i] = lease
        }
      })
    } else {
      policies.forEach((p, i) => {
        if (!admits[i] && p.block !== undefined && blocked[i] === 0) {
          const id = `${key}\u0000${p.id}`
          const strikes = this.#strikes.get(id) ?? { count: 0, since: now, until: 0 }
          countStrike(strikes, p.block, p.windowMs, now)
          this.#strikes.set(id, strikes)
          if (strikes.until > now) blocked[i] = p.block.forMs
        }
      })
    }
    const results = policies.map((p, i) =>
      this.#result(key, p, now, costAt(cost, i), admits[i]!, allowed, blocked[i]!, leases[i]),
    )
    return { allowed, results, leases }
  }

  #result(
    key: string,
    policy: Policy,
    now: number,
    cost: number,
    admits: boolean,
    allowed: boolean,
    blockedMs: number,
    lease: number | undefined,
  ): PolicyResult {
    if (!timed(policy)) {
      const { held } = this.#held(key, policy, now)
      const base = {
        policy,
        allowed: admits,
        limit: policy.limit,
        remaining: Math.max(policy.limit - held, 0),
        resetMs: 0,
        retryAfterMs: 0,
      }
      return lease === undefined ? base : { ...base, lease: { id: String(lease), permits: cost } }
    }
    const kernel = this.#kernel(key, policy, now)
    const quota = this.#quota
    kernel.quota(0, now, cost, allowed, quota)
    const blocked = blockedMs > 0
    const result = {
      policy,
      allowed: admits,
      limit: policy.limit,
      remaining: blocked ? 0 : quota.available,
      resetMs: blocked ? Math.max(blockedMs, kernel.wait(0, now, 1)) : quota.resetMs,
      retryAfterMs: blocked ? Math.max(blockedMs, quota.retryAfterMs) : quota.retryAfterMs,
    }
    if (blocked) return { ...result, blocked: true }
    return allowed && cost > 0 ? { ...result, receipt: quota.receipt } : result
  }

  refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts: readonly (number | undefined)[] | undefined,
    now: number,
  ): void {
    policies.forEach((p, i) => {
      const charge = costAt(cost, i)
      if (timed(p) && charge > 0) this.#kernel(key, p, now).refund(0, now, charge, receipts?.[i])
    })
  }

  force(key: string, policies: readonly Policy[], cost: Cost, now: number): PolicyResult[] {
    policies.forEach((p, i) => {
      const charge = costAt(cost, i)
      if (timed(p) && charge > 0) this.#kernel(key, p, now).force(0, now, charge)
    })
    return this.get(key, policies, now)
  }

  block(key: string, policies: readonly Policy[], ms: number, now: number): void {
    for (const p of policies) {
      if (!timed(p)) continue
      const id = `${key}\u0000${p.id}`
      if (ms === 0) this.#strikes.delete(id)
      else this.#strikes.set(id, { count: 0, since: now + ms - p.windowMs, until: now + ms })
    }
  }

  release(key: string, policy: Policy, lease: number): void {
    this.#slots.get(`${key}\u0000${policy.id}`)?.leases.delete(lease)
  }

  get(key: string, policies: readonly Policy[], now: number): PolicyResult[] {
    return policies.map((p) => {
      const blocked = timed(p) ? this.#blockedFor(key, p, now) : 0
      if (!timed(p)) {
        const { held } = this.#held(key, p, now)
        return this.#result(key, p, now, 1, held + 1 <= p.limit, false, 0, undefined)
      }
      const allowed = blocked === 0 && this.#kernel(key, p, now).available(0, now) >= 1
      return this.#result(key, p, now, 1, allowed, false, blocked, undefined)
    })
  }

  resetAll(): void {
    this.#kernels.clear()
    this.#strikes.clear()
    this.#slots.clear()
  }

  reset(key: string, policies: readonly Policy[] | undefined): void {
    for (const map of [this.#kernels, this.#strikes, this.#slots] as Map<string, unknown>[]) {
      for (const id of [...map.keys()]) {
        const [k, policy] = id.split('\u0000')
        if (k === key && (policies === undefined || policies.some((p) => p.id === policy))) {
          map.delete(id)
        }
      }
    }
  }
}

function timed(policy: Policy): boolean {
  return algorithmDefinition(policy.spec.algorithm).timed
}
