import { ManualClock, type NormalizedRateSpec } from '@sluice/core'
import { rateKernel } from '@sluice/core/internal'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { memoryStore } from './memory-store'
import { compilePolicy, concurrencyPolicy, type PolicyOptions } from './policy'
import type { Policy, Store, TakeResult } from './store'
import { type LeasedStore, withLeases } from './with-leases'

const N = 3
const SHARE = 0.1
const TTL = 300
const LIMIT = 100
const WINDOW = 1000
/** B = floor(share × capacity) at capacity 200. */
const B = Math.floor(SHARE * LIMIT)

const ALGORITHMS: readonly PolicyOptions[] = [
  { algorithm: 'fixed-window', limit: LIMIT, window: WINDOW },
  { algorithm: 'sliding-window', limit: LIMIT, window: WINDOW, slots: 10 },
  { algorithm: 'token-bucket', limit: LIMIT, window: WINDOW },
  { algorithm: 'leaky-bucket', limit: LIMIT, window: WINDOW },
  { algorithm: 'warm-up', limit: LIMIT, window: WINDOW, warmUp: 2 * WINDOW },
]

/** The stated bound (README, "Quota leases"): 0 for a fixed window, N × B otherwise. */
const boundOf = (policy: Policy) => (policy.spec.algorithm === 'fixed-window' ? 0 : N * B)

type Command =
  | { type: 'take'; p: number; cost: number; times: number }
  | { type: 'advance'; ms: number }
  | { type: 'expire'; p: number }
  | { type: 'flush'; p: number }

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      type: fc.constant('take' as const),
      p: fc.nat(N - 1),
      cost: fc.integer({ min: 1, max: 3 }),
      times: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 120 })),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.constant('advance' as const),
      ms: fc.oneof(fc.nat(TTL), fc.nat(2 * WINDOW)),
    }),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('expire' as const), p: fc.nat(N - 1) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('flush' as const), p: fc.nat(N - 1) }) },
)

interface Admission {
  t: number
  cost: number
}

/** The most admitted beyond the algorithm's own limit in any of its windows. */
function overshoot(policy: Policy, admitted: readonly Admission[]): number {
  const spec = policy.spec as NormalizedRateSpec
  if (spec.algorithm === 'fixed-window' || spec.algorithm === 'sliding-window') {
    // A sliding window counts generations c − slots … c (slots of window / slots).
    const slots = spec.algorithm === 'sliding-window' ? spec.slots : 1
    const span = spec.algorithm === 'sliding-window' ? slots + 1 : 1
    const perGeneration = new Map<number, number>()
    for (const { t, cost } of admitted) {
      const g = Math.floor((t * slots) / spec.window)
      perGeneration.set(g, (perGeneration.get(g) ?? 0) + cost)
    }
    let worst = 0
    for (const g of perGeneration.keys()) {
      let sum = 0
      for (let k = g; k < g + span; k++) sum += perGeneration.get(k) ?? 0
      worst = Math.max(worst, sum - spec.limit)
    }
    return worst
  }
  // Buckets: at most capacity + rate × (b − a) in any interval [a, b].
  const capacity = rateKernel(spec).capacity
  const rate = spec.limit / spec.window
  let worst = 0
  for (let i = 0; i < admitted.length; i++) {
    let sum = 0
    for (let j = i; j < admitted.length; j++) {
      sum += admitted[j]!.cost
      const allowed = capacity + rate * (admitted[j]!.t - admitted[i]!.t)
      worst = Math.max(worst, sum - allowed)
    }
  }
  return worst
}

describe('withLeases: the overshoot bound under adversarial interleavings (simulation)', () => {
  for (const options of ALGORITHMS) {
    it(`${options.algorithm}: admitted ≤ limit + bound in every window, refusals only near the limit`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(command, { maxLength: 80 }), async (commands) => {
          const clock = new ManualClock(0)
          const shared = memoryStore({ clock })
          const policy = compilePolicy(options, 'test')
          const processes = Array.from({ length: N }, () =>
            withLeases(shared, { share: SHARE, ttl: TTL, clock }),
          )
          const admitted: Admission[] = []
          for (const step of commands) {
            if (step.type === 'advance') clock.advance(step.ms)
            else if (step.type === 'expire') processes[step.p]!.expire()
            else if (step.type === 'flush') await processes[step.p]!.flush()
            else {
              for (let k = 0; k < step.times; k++) {
                const result = processes[step.p]!.take('k', [policy], step.cost) as TakeResult
                if (result.allowed) admitted.push({ t: clock.now(), cost: step.cost })
                else {
                  // Refused only while what the store has left (beyond every block held)
                  // is under cost + N × B.
                  const left = shared.get('k', [policy])[0]!.remaining
                  expect(left).toBeLessThan(step.cost + N * B)
                }
              }
            }
          }
          expect(overshoot(policy, admitted)).toBeLessThanOrEqual(boundOf(policy))
        }),
        { numRuns: 150 },
      )
    })
  }

  // The worst case the bound covers: blocks taken before the bucket refilled, spent after.
  it.each(['token-bucket', 'sliding-window', 'fixed-window'] as const)(
    '%s: blocks held across a refill overshoot by at most N × B (0 for a fixed window)',
    (algorithm) => {
      const clock = new ManualClock(0)
      const shared = memoryStore({ clock })
      const policy = compilePolicy(
        ALGORITHMS.find((given) => given.algorithm === algorithm)!,
        'test',
      )
      const processes = Array.from({ length: N }, () =>
        withLeases(shared, { share: SHARE, ttl: TTL, clock }),
      )
      const admitted: Admission[] = []
      const take = (p: number, times: number) => {
        for (let k = 0; k < times; k++) {
          if ((processes[p]!.take('k', [policy], 1) as TakeResult).allowed) {
            admitted.push({ t: clock.now(), cost: 1 })
          }
        }
      }
      clock.advance(WINDOW - 150)
      // A key's first decision is exact; the second takes a block.
      for (let p = 0; p < N; p++) take(p, 2)
      clock.advance(200)
      for (let p = 0; p < N; p++) take(p, B - 1)
      // A sliding window still counts the blocks' slot for a whole window: drain once it left.
      if (algorithm === 'sliding-window') clock.advance(WINDOW - 100)
      take(0, 2 * LIMIT)
      const worst = overshoot(policy, admitted)
      if (algorithm === 'fixed-window') expect(worst).toBe(0)
      else expect(worst).toBeGreaterThan(0)
      expect(worst).toBeLessThanOrEqual(boundOf(policy))
    },
  )

  it('admits what an exact store admits when one process holds the key (fixed window, no refunds lost)', () => {
    const clock = new ManualClock(0)
    const shared = memoryStore({ clock })
    const policy = compilePolicy({ algorithm: 'fixed-window', limit: 1000, window: 1000 }, 'test')
    const leased = withLeases(shared, { share: 0.01, clock })
    let admitted = 0
    for (let i = 0; i < 1500; i++)
      if ((leased.take('k', [policy], 1) as TakeResult).allowed) admitted++
    expect(admitted).toBe(1000)
  })
})

/** Counts the calls a leased store makes to the store it wraps. */
function counting(store: Store): { store: Store; calls: () => number } {
  let calls = 0
  const counted = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        calls++
        return value.apply(target, args)
      }
    },
  })
  return { store: counted, calls: () => calls }
}

describe('withLeases: store calls, results, slots and options', () => {
  it('makes one store call per block far from the limit, one per decision near it', () => {
    const clock = new ManualClock(0)
    const { store, calls } = counting(memoryStore({ clock }))
    const policy = compilePolicy(
      { algorithm: 'fixed-window', limit: 100_000, window: 60_000 },
      'test',
    )
    const leased = withLeases(store, { clock })
    for (let i = 0; i < 1000; i++) leased.take('k', [policy], 1)
    // B = 100 at the default share, topped up once three quarters are spent: one call per 75 or more.
    // (The first decision of a key is exact: a block pays off only for a key asked again.)
    expect(calls()).toBeLessThanOrEqual(2 + 1000 / 75)
    expect(calls()).toBeGreaterThanOrEqual(1000 / 100)
    const first = leased.take('k', [policy], 1) as TakeResult
    expect(first.results[0]!.remaining).toBe(100_000 - 1001)
  })

  it('shrinks blocks near the limit until each decision is one exact call', () => {
    const clock = new ManualClock(0)
    const { store, calls } = counting(memoryStore({ clock }))
    const policy = compilePolicy(
      { algorithm: 'fixed-window', limit: 10_000, window: 60_000 },
      'test',
    )
    const leased = withLeases(store, { share: 0.01, clock })
    let admitted = 0
    for (let i = 0; i < 10_000; i++)
      if ((leased.take('k', [policy], 1) as TakeResult).allowed) admitted++
    expect(admitted).toBe(10_000)
    const before = calls()
    // The last 8 permits: one call each (a block is at most an eighth of what is left).
    expect(before).toBeGreaterThan(100)
    const refused = leased.take('k', [policy], 1) as TakeResult
    expect(refused.allowed).toBe(false)
    // The refusal is kept locally until the window ends (capped at ttl).
    leased.take('k', [policy], 1)
    expect(calls()).toBe(before + 1)
    clock.advance(1000)
    leased.take('k', [policy], 1)
    expect(calls()).toBe(before + 2)
  })

  it('refunds what is left of a block when its ttl ends', () => {
    const clock = new ManualClock(0)
    const shared = memoryStore({ clock })
    const policy = compilePolicy(
      { algorithm: 'token-bucket', limit: 1000, window: 3_600_000 },
      'test',
    )
    const leased = withLeases(shared, { share: 0.1, ttl: '1s', clock })
    leased.take('k', [policy], 1)
    leased.take('k', [policy], 1)
    expect(shared.get('k', [policy])[0]!.remaining).toBe(899)
    clock.advance(1000)
    leased.expire()
    expect(shared.get('k', [policy])[0]!.remaining).toBe(998)
  })

  it('leases bulkhead slots and gives idle ones back, never more in flight than max', () => {
    const clock = new ManualClock(0)
    const shared = memoryStore({ clock })
    const policy = concurrencyPolicy('pool', 20)
    const a = withLeases(shared, { slots: 5, clock })
    const b = withLeases(shared, { slots: 5, clock })
    const held = []
    for (let i = 0; i < 30; i++) {
      const result = (i % 2 === 0 ? a : b).take('k', [policy], 1) as TakeResult
      if (result.allowed) held.push({ by: i % 2 === 0 ? a : b, lease: result.results[0]!.lease! })
    }
    expect(held.length).toBe(20)
    expect(shared.inFlight).toBe(20)
    for (const { by, lease } of held) by.release('k', policy, lease)
    clock.advance(1000)
    a.expire()
    b.expire()
    expect(shared.inFlight).toBe(0)
  })

  it('keeps the wrapped store as it is for policies too small to lease', () => {
    const clock = new ManualClock(0)
    const { store, calls } = counting(memoryStore({ clock }))
    const policy = compilePolicy({ algorithm: 'fixed-window', limit: 100, window: 1000 }, 'test')
    const leased = withLeases(store, { clock })
    for (let i = 0; i < 10; i++) leased.take('k', [policy], 1)
    expect(calls()).toBe(10)
  })

  it('rejects bad options naming the option and the value', () => {
    const store = memoryStore()
    expect(() => withLeases(store, { share: 0 }, 'redisStore')).toThrow(
      'redisStore: "lease.share" must be a number above 0 and at most 1, got 0',
    )
    expect(() => withLeases(store, { share: 1.5 })).toThrow('"lease.share"')
    expect(() => withLeases(store, { ttl: '0s' }, 'redisStore')).toThrow('redisStore: "lease.ttl"')
    expect(() => withLeases(store, { slots: -1 })).toThrow('"lease.slots"')
    expect(() => withLeases(store, { shares: 1 } as never)).toThrow('unknown option "shares"')
  })

  it('keeps what the wrapped store offers beyond Store', () => {
    const leased = withLeases(memoryStore(), {}) as LeasedStore & { inFlight: number }
    expect(leased.inFlight).toBe(0)
  })
})
