import { normalizeSpec } from '@sluice/core'
import { type Quota, type RateKernel, rateKernel } from '@sluice/core/internal'
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
  /** Random sequences to try (each of up to 40 calls on up to three keys). Default 40. */
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
          for (const [index, step] of program.entries()) {
            const key = `${tag}-k${step.key}`
            const chosen = pick(policies, step.policies)
            const cost = step.perPolicy ? chosen.map((_, i) => step.costs[i] ?? 0) : step.cost
            const where =
              step.op === 'resetAll'
                ? `step ${index} (resetAll)`
                : `step ${index} (${step.op} on ${key}, ${describeCost(cost)})`
            const now = await options.clock.now()
            switch (step.op) {
              case 'advance':
                await options.clock.advance(step.ms)
                break
              case 'take': {
                if (typeof cost !== 'number' && cost.every((c) => c === 0)) break
                const got = await store.take(key, chosen, cost)
                const want = model.take(key, chosen, cost, now)
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
              compare(
                await store.get(each, policies),
                model.get(each, policies, at),
                `${where}, then get ${each}`,
              )
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

/** A policy of the plan, before it gets its run's name. */
type PlannedPolicy =
  | {
      algorithm: 'token-bucket' | 'leaky-bucket' | 'sliding-window' | 'fixed-window' | 'warm-up'
      limit: number
      window: number
      capacity: number
      slots: number
      warmUp: number
      block: { forMs: number; after: number } | undefined
    }
  | { algorithm: 'concurrency'; max: number }

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

const plannedPolicy: fc.Arbitrary<PlannedPolicy> = fc.oneof(
  fc
    .record({
      algorithm: fc.constantFrom(
        'token-bucket',
        'leaky-bucket',
        'sliding-window',
        'fixed-window',
        'warm-up',
      ) as fc.Arbitrary<
        'token-bucket' | 'leaky-bucket' | 'sliding-window' | 'fixed-window' | 'warm-up'
      >,
      rate,
      burst: fc.constantFrom(1, 0.5, 2),
      slots: fc.integer({ min: 1, max: 5 }),
      warmUp: fc.constantFrom(0, 500, 5000),
      block: fc.option(
        fc.record({ forMs: fc.constantFrom(50, 700, 5000), after: fc.integer({ min: 1, max: 3 }) }),
        { nil: undefined, freq: 3 },
      ),
    })
    .map(({ algorithm, rate, burst, slots, warmUp, block }) => ({
      algorithm,
      limit: rate.limit,
      window: rate.window,
      capacity: Math.max(1, Math.floor(rate.limit * burst)),
      slots,
      warmUp,
      block,
    })),
  fc.record({
    algorithm: fc.constant('concurrency' as const),
    max: fc.integer({ min: 1, max: 3 }),
  }),
)

/** Four policies per run: calls use subsets of them. */
const plans = fc.array(plannedPolicy, { minLength: 4, maxLength: 4 })

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
  ),
  key: fc.integer({ min: 0, max: KEYS - 1 }),
  policies: fc.integer({ min: 1, max: 15 }),
  cost: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.constant(1), fc.integer({ min: 1, max: 1e9 })),
  perPolicy: fc.boolean(),
  costs: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 4, maxLength: 4 }),
  ms: fc.oneof(
    fc.integer({ min: 0, max: 120 }),
    fc.integer({ min: 0, max: 4000 }),
    fc.constantFrom(0.001, 14.286, 333.333),
  ),
  pick: fc.nat(),
  withReceipts: fc.boolean(),
  all: fc.boolean(),
})
const steps = fc.array(step, { minLength: 1, maxLength: 40 })

function pick(policies: readonly Policy[], mask: number): Policy[] {
  return policies.filter((_, i) => (mask >> i) & 1)
}

function describeCost(cost: Cost): string {
  return typeof cost === 'number' ? `cost ${cost}` : `costs [${cost.join(', ')}]`
}

function policyOf(planned: PlannedPolicy, name: string): Policy {
  if (planned.algorithm === 'concurrency') {
    return makePolicy({ algorithm: 'concurrency', max: planned.max, maxQueue: 0 }, name)
  }
  const { algorithm, limit, window, capacity, slots, warmUp } = planned
  const spec =
    algorithm === 'token-bucket'
      ? { algorithm, limit, window, capacity }
      : algorithm === 'warm-up'
        ? { algorithm, limit, window, capacity, warmUp }
        : algorithm === 'sliding-window'
          ? { algorithm, limit, window, slots }
          : { algorithm, limit, window }
  return makePolicy(normalizeSpec(spec), name, planned.block)
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
  return policy.spec.algorithm !== 'concurrency'
}
