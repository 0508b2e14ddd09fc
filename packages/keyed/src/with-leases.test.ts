import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { ManualClock, type NormalizedRateSpec } from '@sluice/core'
import { rateKernel } from '@sluice/core/internal'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isPromiseLike, type MaybePromise } from './maybe-promise'
import { memoryStore } from './memory-store'
import { compilePolicy, concurrencyPolicy, type PolicyOptions } from './policy'
import type { Cost, Lease, Policy, PolicyResult, Store, TakeResult } from './store'
import { type LeasedStore, withLeases } from './with-leases'

const N = 3
const SHARE = 0.05
const TTL = 300
const LIMIT = 100
const WINDOW = 1000
/** B = floor(share × capacity) at capacity 100 (the limit): 5. */
const B = Math.floor(SHARE * LIMIT)

const ALGORITHMS: readonly PolicyOptions[] = [
  { algorithm: 'fixed-window', limit: LIMIT, window: WINDOW },
  { algorithm: 'sliding-window', limit: LIMIT, window: WINDOW, slots: 10 },
  { algorithm: 'token-bucket', limit: LIMIT, window: WINDOW },
  { algorithm: 'token-bucket', limit: LIMIT, window: WINDOW, capacity: 3 * LIMIT },
  { algorithm: 'leaky-bucket', limit: LIMIT, window: WINDOW },
  { algorithm: 'warm-up', limit: LIMIT, window: WINDOW, warmUp: 2 * WINDOW },
]

/** A policy's block: floor(share × capacity), not leased (0) under 2. */
const blockOf = (policy: Policy): number => {
  const block = Math.floor(SHARE * rateKernel(policy.spec as NormalizedRateSpec).capacity)
  return block < 2 ? 0 : block
}

/**
 * The stated bound (README, "Quota leases"): 0 for a fixed window (and for a policy not
 * leased, such as a leaky bucket, whose capacity is 1), N × B otherwise.
 */
const boundOf = (policy: Policy) =>
  policy.spec.algorithm === 'fixed-window' ? 0 : N * blockOf(policy)

type Command =
  | { type: 'take'; p: number; cost: number; times: number }
  | { type: 'advance'; ms: number }
  | { type: 'expire'; p: number }
  | { type: 'flush'; p: number }
  | { type: 'refund'; p: number; pick: number; n: number; all: boolean }
  | { type: 'force'; p: number; cost: number }
  | { type: 'deliver'; pick: number; reply: boolean }

const process_ = fc.nat(N - 1)
const commands = (delayed: boolean): fc.Arbitrary<Command> =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        type: fc.constant('take' as const),
        p: process_,
        cost: fc.integer({ min: 1, max: 3 }),
        // A few, a good part of the limit (blocks still held, the lease goes on), or past it.
        times: fc.oneof(
          fc.integer({ min: 1, max: 4 }),
          fc.integer({ min: 20, max: 60 }),
          fc.integer({ min: 1, max: 120 }),
        ),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        type: fc.constant('advance' as const),
        // Within a lease, anywhere, or just past a window (what a block counted then no longer counts in).
        ms: fc.oneof(
          fc.nat(TTL),
          fc.nat(2 * WINDOW),
          fc.integer({ min: WINDOW, max: WINDOW + 300 }),
        ),
      }),
    },
    { weight: 1, arbitrary: fc.record({ type: fc.constant('expire' as const), p: process_ }) },
    { weight: 1, arbitrary: fc.record({ type: fc.constant('flush' as const), p: process_ }) },
    {
      weight: 4,
      arbitrary: fc.record({
        type: fc.constant('refund' as const),
        p: process_,
        pick: fc.nat(),
        n: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constant(1000)),
        // Every admission of the process still standing, as `refundWhen` on every success does.
        all: fc.boolean(),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        type: fc.constant('force' as const),
        p: process_,
        cost: fc.integer({ min: 1, max: 20 }),
      }),
    },
    {
      weight: delayed ? 4 : 0,
      arbitrary: fc.record({
        type: fc.constant('deliver' as const),
        pick: fc.nat(),
        reply: fc.boolean(),
      }),
    },
  )

/** A take that was admitted: its permits net of what was refunded since. */
interface Admission {
  readonly p: number
  /** When it was asked for and when its answer came (the same for a decision from a block). */
  readonly asked: number
  readonly answered: number
  /**
   * When it counts: when it was answered, or, for the store's own answer passed on as it
   * is (a policy not leased), when the store decided it.
   */
  readonly t: number
  readonly receipt: number | undefined
  /** Permits taken. */
  readonly taken: number
  /** Permits taken and not refunded since. */
  cost: number
}

/** A refund, when it was made. */
interface Refund {
  readonly t: number
  readonly n: number
}

interface Played {
  readonly admitted: readonly Admission[]
  readonly refunds: readonly Refund[]
}

/**
 * The most admitted beyond the algorithm's own limit in any of its windows. A window counts
 * what was taken net of what was refunded of it since, wherever that was (a window's
 * refund names the slot its permits were counted in). A bucket counts a refund when it is
 * made: the kernel credits the bucket then (at most what the take's receipt says is still
 * owed, which another client's refund may have made stale), so even an exact store admits
 * more than capacity + rate × (b − a) in [a, b] once permits taken before a are refunded
 * within it.
 */
function overshoot(policy: Policy, { admitted, refunds }: Played): number {
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
  // Buckets: at most capacity + rate × (b − a) in any interval [a, b], per instant (answers
  // come out of order; an interval holds everything at its ends).
  const perInstant = new Map<number, number>()
  for (const { t, taken } of admitted) perInstant.set(t, (perInstant.get(t) ?? 0) + taken)
  for (const { t, n } of refunds) perInstant.set(t, (perInstant.get(t) ?? 0) - n)
  const instants = [...perInstant.keys()].sort((x, y) => x - y)
  const capacity = rateKernel(spec).capacity
  const rate = spec.limit / spec.window
  let worst = 0
  for (let i = 0; i < instants.length; i++) {
    let sum = 0
    for (let j = i; j < instants.length; j++) {
      sum += perInstant.get(instants[j]!)!
      const allowed = capacity + rate * (instants[j]! - instants[i]!)
      worst = Math.max(worst, sum - allowed)
    }
  }
  return worst
}

/**
 * A fixed window, by the store's own count: what was admitted per window (net of refunds)
 * never passes the limit, and every admission was spent in the window its permits were
 * counted in, or, for one that went to the store, in a window it was waiting through.
 */
function checkFixedWindow(admitted: readonly Admission[]): void {
  const perWindow = new Map<number, number>()
  for (const { asked, answered, receipt, cost } of admitted) {
    expect(receipt).toBeGreaterThanOrEqual(Math.floor(asked / WINDOW))
    expect(receipt).toBeLessThanOrEqual(Math.floor(answered / WINDOW))
    perWindow.set(receipt!, (perWindow.get(receipt!) ?? 0) + cost)
  }
  for (const count of perWindow.values()) expect(count).toBeLessThanOrEqual(LIMIT)
}

/**
 * The shared store over a network, as the simulation drives it: each call waits until a
 * `deliver` runs it on the memory store (at the time then, in any order) and another
 * answers it (or one `deliver` does both), so replies come out of order, late, across
 * window edges, and a refund or top-up may reach the store after later calls.
 */
class DelayedStore implements Store {
  readonly calls: {
    readonly run: () => unknown
    ran: boolean
    value: unknown
    failed: boolean
    readonly settle: (value: unknown, failed: boolean) => void
  }[] = []
  /** When the store decided each take it answered. */
  readonly decidedAt = new WeakMap<object, number>()
  readonly #store: Store
  readonly #clock: ManualClock

  constructor(store: Store, clock: ManualClock) {
    this.#store = store
    this.#clock = clock
  }

  #defer<T>(run: () => MaybePromise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.calls.push({
        run,
        ran: false,
        value: undefined,
        failed: false,
        settle: (value, failed) => (failed ? reject(value) : resolve(value as T)),
      })
    })
  }

  /** Runs the picked call on the store if it has not run, and answers it if `reply` (or it had run). */
  deliver(pick: number, reply: boolean): void {
    if (this.calls.length === 0) return
    const index = pick % this.calls.length
    const call = this.calls[index]!
    if (!call.ran) {
      call.ran = true
      try {
        call.value = call.run()
      } catch (error) {
        call.value = error
        call.failed = true
      }
      if (!reply) return
    }
    this.calls.splice(index, 1)
    call.settle(call.value, call.failed)
  }

  take(key: string, policies: readonly Policy[], cost: Cost) {
    return this.#defer(() => {
      const taken = this.#store.take(key, policies, cost) as TakeResult
      this.decidedAt.set(taken, this.#clock.now())
      return taken
    })
  }
  refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts?: readonly (number | undefined)[],
  ) {
    return this.#defer(() => this.#store.refund(key, policies, cost, receipts))
  }
  force(key: string, policies: readonly Policy[], cost: Cost) {
    return this.#defer(() => this.#store.force(key, policies, cost))
  }
  block(key: string, policies: readonly Policy[], ms: number) {
    return this.#defer(() => this.#store.block(key, policies, ms))
  }
  release(key: string, policy: Policy, lease: Lease) {
    return this.#defer(() => this.#store.release(key, policy, lease))
  }
  get(key: string, policies: readonly Policy[]) {
    return this.#defer(() => this.#store.get(key, policies))
  }
  reset(key: string, policies?: readonly Policy[]) {
    return this.#defer(() => this.#store.reset(key, policies))
  }
  resetAll() {
    return this.#defer(() => this.#store.resetAll())
  }
}

/** Lets every promise continuation that can run now run. */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve))

interface Run {
  readonly ttl: number
  readonly delayed: boolean
  readonly commands: readonly Command[]
}

/**
 * Plays `run` with N leased processes on one key of `options`' policy; answers what was
 * admitted, and whether a refusal ever came while the store had plenty left (checked only
 * where that can be asked of it: answers at once, no refunds or forces yet).
 */
async function play(options: PolicyOptions, run: Run): Promise<Played> {
  const clock = new ManualClock(0)
  const memory = memoryStore({ clock })
  const delayed = run.delayed ? new DelayedStore(memory, clock) : undefined
  const shared: Store = delayed ?? memory
  const policy = compilePolicy(options, 'test')
  const processes = Array.from({ length: N }, () =>
    withLeases(shared, { share: SHARE, ttl: run.ttl, clock }),
  )
  const admitted: Admission[] = []
  const refunds: Refund[] = []
  let handedBack = false
  const record = (p: number, asked: number, cost: number, result: TakeResult) => {
    if (result.allowed) {
      const answered = clock.now()
      const t = delayed?.decidedAt.get(result) ?? answered
      const receipt = result.results[0]!.receipt
      admitted.push({ p, asked, answered, t, receipt, taken: cost, cost })
    } else if (!delayed && !handedBack) {
      // Refused only while what the store has left (beyond every block held) is under
      // cost + N × B.
      const left = memory.get('k', [policy])[0]!.remaining
      expect(left).toBeLessThan(cost + N * blockOf(policy))
    }
  }
  for (const step of run.commands) {
    const leased =
      step.type === 'advance' || step.type === 'deliver' ? undefined : processes[step.p]!
    if (step.type === 'advance') clock.advance(step.ms)
    else if (step.type === 'deliver') delayed?.deliver(step.pick, step.reply)
    else if (step.type === 'expire') leased!.expire()
    else if (step.type === 'flush') void leased!.flush().catch(() => {})
    else if (step.type === 'force') {
      handedBack = true
      void Promise.resolve(leased!.force('k', [policy], step.cost)).catch(() => {})
    } else if (step.type === 'refund') {
      const own = admitted.filter((a) => a.p === step.p && a.cost > 0)
      if (own.length === 0) continue
      handedBack = true
      for (const taken of step.all ? own : [own[step.pick % own.length]!]) {
        const n = step.all ? taken.cost : Math.min(step.n, taken.cost)
        taken.cost -= n
        refunds.push({ t: clock.now(), n })
        void Promise.resolve(leased!.refund('k', [policy], n, [taken.receipt])).catch(() => {})
      }
    } else {
      for (let k = 0; k < step.times; k++) {
        const asked = clock.now()
        const answer = leased!.take('k', [policy], step.cost)
        if (isPromiseLike(answer)) {
          void Promise.resolve(answer).then((result) => record(step.p, asked, step.cost, result))
        } else record(step.p, asked, step.cost, answer)
      }
    }
    if (delayed) await settled()
    else if (blockOf(policy) > 0 && policy.spec.algorithm !== 'fixed-window') {
      // What the bound rests on: no process holds more than B beyond what the store counts
      // as left (a fixed window's refunds may refill a block: they are spent in their window).
      const left = memory.get('k', [policy])[0]!.remaining
      for (const leased of processes) {
        const held = (leased.get('k', [policy]) as readonly PolicyResult[])[0]!.remaining - left
        expect(held).toBeLessThanOrEqual(blockOf(policy))
      }
    }
  }
  // Every call still out is run and answered, in order, at the end.
  while (delayed !== undefined && delayed.calls.length > 0) {
    delayed.deliver(0, true)
    await settled()
  }
  return { admitted, refunds }
}

// Shorter than the window, and longer: a block may outlive several windows.
const ttl = fc.constantFrom(TTL, 50, 1.5 * WINDOW, 2.5 * WINDOW)
const runs = fc.oneof(
  fc.record({
    ttl,
    delayed: fc.constant(false),
    commands: fc.array(commands(false), { maxLength: 40, size: 'max' }),
  }),
  fc.record({
    ttl,
    delayed: fc.constant(true),
    commands: fc.array(commands(true), { maxLength: 80, size: 'max' }),
  }),
)

describe('withLeases: the overshoot bound under adversarial interleavings (simulation)', () => {
  for (const options of ALGORITHMS) {
    const label = `${options.algorithm}${'capacity' in options ? ` (capacity ${options.capacity})` : ''}`
    it(`${label}: admitted ≤ limit + bound in every window with refunds, forces, any ttl and replies out of order`, async () => {
      const policy = compilePolicy(options, 'test')
      await fc.assert(
        fc.asyncProperty(runs, async (run) => {
          const played = await play(options, run)
          if (policy.spec.algorithm === 'fixed-window') checkFixedWindow(played.admitted)
          else expect(overshoot(policy, played)).toBeLessThanOrEqual(boundOf(policy))
        }),
        { numRuns: 200 },
      )
      // Seconds on an idle machine; a loaded one (other suites in parallel) takes longer.
    }, 120_000)
  }

  it('a refunded block is not spent again once its window has passed (sliding window, one process)', () => {
    // 100 per 200 ms, B = 10, ttl 1 s: take 60, refund them all, and 250 ms later (the
    // first 60 no longer count) take as many as are admitted: at most limit + B.
    const clock = new ManualClock(0)
    const shared = memoryStore({ clock })
    const policy = compilePolicy(
      { algorithm: 'sliding-window', limit: 100, window: 200, slots: 10 },
      'test',
    )
    const leased = withLeases(shared, { share: 0.1, ttl: '1s', clock })
    const taken: TakeResult[] = []
    for (let i = 0; i < 60; i++) taken.push(leased.take('k', [policy], 1) as TakeResult)
    expect(taken.every((result) => result.allowed)).toBe(true)
    for (const result of taken) leased.refund('k', [policy], 1, [result.results[0]!.receipt])
    // What this process still holds of its block (the store does not count it as left).
    const held =
      (leased.get('k', [policy]) as readonly PolicyResult[])[0]!.remaining -
      shared.get('k', [policy])[0]!.remaining
    expect(held).toBe(1)
    clock.advance(250)
    let admitted = 0
    for (let i = 0; i < 300; i++)
      if ((leased.take('k', [policy], 1) as TakeResult).allowed) admitted++
    // The window's 100 and the permit held: the 60 refunds went to the store, to a slot
    // that no longer counts (kept in the block, they were spent again: 160).
    expect(admitted).toBe(100 + held)
  })

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
          const result = processes[p]!.take('k', [policy], 1) as TakeResult
          if (result.allowed) {
            const t = clock.now()
            const receipt = result.results[0]!.receipt
            admitted.push({ p, asked: t, answered: t, t, receipt, taken: 1, cost: 1 })
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
      const worst = overshoot(policy, { admitted, refunds: [] })
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

  it("hides the wrapped store's one-call settle: a settle goes through the leases' refund and force", () => {
    let bypassed = 0
    const inner = Object.assign(memoryStore({ clock: new ManualClock(0) }), {
      settle: () => {
        bypassed++
        return []
      },
    })
    const leased: Store = withLeases(inner, {})
    // Given out, the wrapped store's settle would give back a leased block's permits there too.
    expect(leased.settle).toBeUndefined()
    expect(typeof leased.refund).toBe('function')
    expect(bypassed).toBe(0)
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

  it('flush resolves once the store has taken back what was left and what was refunded', async () => {
    const clock = new ManualClock(0)
    const memory = memoryStore({ clock })
    // A store whose calls run a turn of the event loop later, as a remote one answers.
    const later: Store = new Proxy(memory, {
      get(target, prop) {
        const value = Reflect.get(target, prop)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) =>
          new Promise((resolve) => setImmediate(() => resolve(value.apply(target, args))))
      },
    })
    const policy = compilePolicy(
      { algorithm: 'token-bucket', limit: 1000, window: 3_600_000 },
      'test',
    )
    const leased = withLeases(later, { share: 0.1, clock })
    await leased.take('k', [policy], 1)
    const taken = await leased.take('k', [policy], 1)
    await leased.refund('k', [policy], 1, [taken.results[0]!.receipt])
    // One exact permit, and a block of 100 of which 1 was spent and refunded.
    expect(memory.get('k', [policy])[0]!.remaining).toBe(899)
    await leased.flush()
    expect(memory.get('k', [policy])[0]!.remaining).toBe(999)
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

  it('keeps nothing per policy once its leases ended: 200,000 policies leave the heap where it was', () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const heapAfterGc = () => {
      gc()
      gc()
      return process.memoryUsage().heapUsed
    }
    const clock = new ManualClock(0)
    // A remote store far from every limit, keeping nothing here: what grows is the lease
    // layer's (a memory store keeps a table per policy and costs far more per new one).
    const answer = (policies: readonly Policy[]): TakeResult => ({
      allowed: true,
      results: policies.map((policy) => ({
        policy,
        allowed: true,
        limit: policy.limit,
        remaining: policy.limit,
        resetMs: 0,
        retryAfterMs: 0,
        receipt: 0,
      })),
    })
    const remote: Store = {
      take: (_key, policies) => answer(policies),
      refund: () => {},
      force: (_key, policies) => answer(policies).results,
      block: () => {},
      release: () => {},
      get: (_key, policies) => answer(policies).results,
      reset: () => {},
      resetAll: () => {},
    }
    const leased = withLeases(remote, { clock })
    const base = compilePolicy(
      { algorithm: 'fixed-window', limit: 10_000, window: 3_600_000 },
      'test',
    )
    const round = (from: number) => {
      for (let i = from; i < from + 100_000; i++) {
        // A plan per tenant, made per call (as compilePolicy names it; B = 10 at the default share).
        const plan: Policy = { ...base, name: `plan-${i}`, id: `plan-${i}|${base.fingerprint}` }
        leased.take('tenant', [plan], 1)
        leased.take('tenant', [plan], 1)
        if (i % 1000 === 999) {
          clock.advance(1000)
          leased.expire()
        }
      }
    }
    round(0) // warms up what is made once
    const before = heapAfterGc()
    round(100_000)
    round(200_000)
    // A table of 200,000 policy ids is tens of MB; 4 MB is noise.
    expect(heapAfterGc() - before).toBeLessThan(4 * 1024 * 1024)
  }, 120_000)
})
