import { type Carry, ManualClock } from '@sluice/core'
import { memoryStore, type Policy, type PolicyResult, type Store } from '@sluice/keyed'
import { withCarry } from '@sluice/keyed/store'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { type RedisStoreError, redisStore } from '../src/index'
import { connect, DAY, describeRedis, HOUR, MINUTE, policy, uniquePrefix } from './helpers'
import { startRedisServer } from './redis-server'

// On Redis a policy's state belongs to its name, and a take, get, refund or force under a
// changed spec of the name carries it over in the script (lib/record.lua, the kernels'
// carry ported to Lua: windows, and token, leaky and warm-up buckets). The tables are the
// ones packages/core and packages/keyed run on memory; each runs on a memory store and on
// Redis, on one ManualClock (the scripts decide on the test's clock), and every number
// must be the same.
const client = connect()
const failures: RedisStoreError[] = []

afterEach(() => {
  expect(failures).toEqual([])
})

const MODES = ['proportional', 'as-is', 'additive', 'reset'] as const satisfies readonly Carry[]
const WINDOWS = ['fixed-window', 'sliding-window'] as const
type Window = (typeof WINDOWS)[number]

function windowPolicy(
  algorithm: Window,
  limit: number,
  window: number,
  carry: Carry = 'proportional',
  slots?: number,
  block?: { for: number; after: number },
): Policy {
  const penalty = block === undefined ? {} : { block }
  const made =
    algorithm === 'fixed-window'
      ? policy.fixedWindow('api', { limit, window, ...penalty })
      : policy.slidingWindow('api', {
          limit,
          window,
          ...(slots === undefined ? {} : { slots }),
          ...penalty,
        })
  return withCarry(made, carry)
}

const BUCKETS = ['token-bucket', 'leaky-bucket', 'warm-up'] as const
type Bucket = (typeof BUCKETS)[number]

function bucketPolicy(
  algorithm: Bucket,
  limit: number,
  window: number,
  carry: Carry = 'proportional',
  more: { capacity?: number; warmUp?: number; block?: { for: number; after: number } } = {},
): Policy {
  const { capacity, warmUp = 30_000, block } = more
  const penalty = block === undefined ? {} : { block }
  const burst = capacity === undefined ? {} : { capacity }
  const made =
    algorithm === 'token-bucket'
      ? policy.tokenBucket('api', { limit, window, ...burst, ...penalty })
      : algorithm === 'leaky-bucket'
        ? policy.leakyBucket('api', { limit, window, ...penalty })
        : policy.warmUp('api', { limit, window, warmUp, ...burst, ...penalty })
  return withCarry(made, carry)
}

/** A memory store and a Redis store on one clock: every call goes to both. */
function twin(clock: ManualClock) {
  const memory = memoryStore({ clock })
  const redis = redisStore({
    client,
    prefix: uniquePrefix(),
    onError: 'deny',
    onFailure: (error) => failures.push(error),
    clock,
    timeout: '10s',
  })
  const both = async <T>(call: (store: Store) => T | PromiseLike<T>): Promise<[T, T]> => [
    await call(memory),
    await call(redis),
  ]
  return { memory, redis, both }
}

const seen = (r: PolicyResult | undefined) => ({
  allowed: r?.allowed,
  remaining: r?.remaining,
  resetMs: r?.resetMs,
  retryAfterMs: r?.retryAfterMs,
  blocked: r?.blocked ?? false,
})

describeRedis('redisStore carries a window over to a changed spec of its name', () => {
  describe('an awkward ratio, 3 → 7, with 2 of 3 available (proportional: ⌊2·7/3⌋ = 4)', () => {
    it.each([
      ['proportional', 4],
      ['as-is', 2],
      ['additive', 6],
      ['reset', 7],
    ] as const)('%s: %d available, then exactly that many admitted', async (carry, expected) => {
      for (const algorithm of WINDOWS) {
        const clock = new ManualClock(1_000_000.25)
        const { both } = twin(clock)
        const three = windowPolicy(algorithm, 3, MINUTE)
        const seven = windowPolicy(algorithm, 7, MINUTE, carry)
        await both((s) => s.take('k', [three], 1))
        const [onMemory, onRedis] = await both((s) => s.get('k', [seven]))
        expect([algorithm, seen(onRedis[0])]).toEqual([algorithm, seen(onMemory[0])])
        expect(onRedis[0]?.remaining).toBe(expected)
        const [takeMemory, takeRedis] = await both((s) => s.take('k', [seven], expected))
        expect(seen(takeRedis.results[0])).toEqual(seen(takeMemory.results[0]))
        expect(takeRedis.allowed).toBe(true)
        const [lastMemory, lastRedis] = await both((s) => s.take('k', [seven], 1))
        expect(seen(lastRedis.results[0])).toEqual(seen(lastMemory.results[0]))
        expect(lastRedis.allowed).toBe(false)
      }
    })
  })

  describe('a window half used: 5 of 10 at 30 s, then 20 per minute', () => {
    it.each([
      // mode, available, fixed window's reset (ms), sliding window's reset (ms)
      ['proportional', 10, 30_000, 36_000],
      ['as-is', 5, 30_000, 36_000],
      ['additive', 15, 30_000, 36_000],
      ['reset', 20, 0, 0],
    ] as const)('%s: %d available', async (carry, available, fixedReset, slidingReset) => {
      for (const algorithm of WINDOWS) {
        // The window starts at the clock's zero: aligned, as the memory table's.
        const clock = new ManualClock(0)
        const { both } = twin(clock)
        await both((s) => s.take('k', [windowPolicy(algorithm, 10, MINUTE)], 5))
        clock.advance(30_000)
        const [onMemory, onRedis] = await both((s) =>
          s.get('k', [windowPolicy(algorithm, 20, MINUTE, carry)]),
        )
        expect(seen(onRedis[0])).toEqual(seen(onMemory[0]))
        expect([algorithm, onRedis[0]?.remaining, onRedis[0]?.resetMs]).toEqual([
          algorithm,
          available,
          algorithm === 'fixed-window' ? fixedReset : slidingReset,
        ])
      }
    })
  })

  describe('debt stays owed: 12 taken of 10 (a penalty), then 5 per minute', () => {
    it.each(MODES)('%s', async (carry) => {
      for (const algorithm of WINDOWS) {
        const clock = new ManualClock(7_777.5)
        const { both } = twin(clock)
        const ten = windowPolicy(algorithm, 10, MINUTE)
        await both((s) => s.take('k', [ten], 10))
        await both((s) => s.force('k', [ten], 2))
        clock.advance(10_000)
        const five = windowPolicy(algorithm, 5, MINUTE, carry)
        const [onMemory, onRedis] = await both((s) => s.take('k', [five], 1))
        expect([algorithm, seen(onRedis.results[0])]).toEqual([
          algorithm,
          seen(onMemory.results[0]),
        ])
        // Only reset forgives the debt.
        expect(onRedis.allowed).toBe(carry === 'reset')
      }
    })
  })

  it('converts a key once, on its next touch; untouched keys stay as written; the last spec wins', async () => {
    for (const algorithm of WINDOWS) {
      const clock = new ManualClock(0)
      const { both } = twin(clock)
      const ten = windowPolicy(algorithm, 10, MINUTE)
      const twenty = windowPolicy(algorithm, 20, MINUTE)
      await both((s) => s.take('a', [ten], 5))
      await both((s) => s.take('b', [ten], 5))
      for (const [key, p, expected] of [
        ['a', twenty, 10],
        ['a', twenty, 10], // converting twice is converting once
        ['b', ten, 5], // "b" was never converted
        ['a', ten, 5], // "a" scales back
      ] as const) {
        const [onMemory, onRedis] = await both((s) => s.get(key, [p]))
        expect(seen(onRedis[0])).toEqual(seen(onMemory[0]))
        expect([algorithm, key, onRedis[0]?.remaining]).toEqual([algorithm, key, expected])
      }
    }
  })

  // Three specs of one name (a rolling deploy: limit and window both change, and a
  // sliding window's slots; and a penalty added) touched in any order, with any mode, at any time: Redis answers every
  // call as the memory store does.
  it('answers any interleaving of three specs as the memory store does (fast-check)', async () => {
    const op = fc.record({
      kind: fc.constantFrom('take', 'take', 'take', 'get', 'force', 'refund'),
      spec: fc.constantFrom(0, 1, 2),
      carry: fc.constantFrom(...MODES),
      cost: fc.integer({ min: 1, max: 4 }),
      advance: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 40_000 }),
        fc.double({ min: 0, max: 5_000, noNaN: true }),
      ),
    })
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...WINDOWS),
        fc.array(op, { minLength: 1, maxLength: 25 }),
        async (algorithm, ops) => {
          const clock = new ManualClock(5_000_000.125)
          const { both } = twin(clock)
          const specs = [
            [6, MINUTE, 6, undefined],
            [4, 45_000, 5, undefined],
            [6, MINUTE, 6, { for: 20_000, after: 2 }],
          ] as const
          const receipts: (number | undefined)[] = [undefined, undefined, undefined]
          for (const { kind, spec, carry, cost, advance } of ops) {
            clock.advance(advance)
            const [limit, window, slots, block] = specs[spec]!
            const p = windowPolicy(algorithm, limit, window, carry, slots, block)
            let results: [readonly PolicyResult[], readonly PolicyResult[]] | undefined
            if (kind === 'take') {
              const [m, r] = await both((s) => s.take('k', [p], cost))
              receipts[spec] = r.results[0]?.receipt
              expect(m.results[0]?.receipt).toBe(r.results[0]?.receipt)
              results = [m.results, r.results]
            } else if (kind === 'get') {
              results = await both((s) => s.get('k', [p]))
            } else if (kind === 'force') {
              results = await both((s) => s.force('k', [p], cost))
            } else {
              await both((s) => s.refund('k', [p], cost, [receipts[spec]]))
              results = await both((s) => s.get('k', [p]))
            }
            expect(seen(results[1][0])).toEqual(seen(results[0][0]))
          }
        },
      ),
      { numRuns: 150 },
    )
  })

  // What a decision costs inside Redis, counted by Redis (INFO commandstats counts the
  // commands scripts call): TIME, GET and SETRANGE, as before specs were kept; a spec
  // that did not change is one string compare in the script, on the value read anyway.
  it.each(WINDOWS)(
    '%s: no extra Redis command per decision when nothing changed',
    async (algorithm) => {
      const server = await startRedisServer()
      try {
        const admin = connect({ port: server.port })
        const store = redisStore({ client: connect({ port: server.port }), timeout: '10s' })
        const calls = async () => {
          const stats = await admin.info('commandstats')
          const counted: Record<string, number> = {}
          for (const [, name, n] of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) {
            if (!['info', 'config', 'evalsha', 'eval', 'script'].includes(name!)) {
              counted[name!] = Number(n)
            }
          }
          await admin.config('RESETSTAT')
          return counted
        }
        const before = windowPolicy(algorithm, 1_000, DAY)
        const after = windowPolicy(algorithm, 2_000, DAY)
        await store.take('k', [before], 1)
        await calls()
        for (let i = 0; i < 10; i++) await store.take('k', [before], 1)
        expect(await calls()).toEqual({ time: 10, get: 10, setrange: 10 })
        // The first take under the new spec converts and writes the whole value once...
        await store.take('k', [after], 1)
        expect(await calls()).toEqual({ time: 1, get: 1, set: 1 })
        // ...and then it is the same again.
        for (let i = 0; i < 10; i++) await store.take('k', [after], 1)
        expect(await calls()).toEqual({ time: 10, get: 10, setrange: 10 })
        // 11 of 1,000 used is 22 of 2,000 (proportional), then 11 more.
        expect((await store.get('k', [after]))[0]?.remaining).toBe(2_000 - 33)
      } finally {
        await server.stop()
      }
    },
  )
})

describeRedis('redisStore carries a bucket over to a changed spec of its name', () => {
  // Guava's setRate: 2 per second, 10 permits taken and 10 more reserved ahead (a penalty
  // forces them), then 1 per second. The 20 permits are paid off at 20 · 500 ms − the
  // capacity's 10 · 500 ms = 5 s in every mode but reset; the next at 5 s + 1 s = 6 s.
  describe('existing debt stays owed: 2 per second, 20 taken, then 1 per second', () => {
    it.each([
      ['proportional', 6000],
      ['as-is', 6000],
      ['additive', 6000],
      ['reset', 0],
    ] as const)('%s: the next permit in %d ms', async (carry, wait) => {
      const clock = new ManualClock(1_000_000)
      const { both } = twin(clock)
      const two = withCarry(
        policy.tokenBucket('api', { limit: 2, window: 1000, capacity: 10 }),
        carry,
      )
      const one = withCarry(
        policy.tokenBucket('api', { limit: 1, window: 1000, capacity: 10 }),
        carry,
      )
      await both((s) => s.take('k', [two], 10))
      await both((s) => s.force('k', [two], 10))
      const [onMemory, onRedis] = await both((s) => s.get('k', [one]))
      expect(seen(onRedis[0])).toEqual(seen(onMemory[0]))
      expect(onRedis[0]?.retryAfterMs).toBe(wait)
      if (wait > 0) {
        clock.advance(wait - 1)
        const [m, r] = await both((s) => s.take('k', [one], 1))
        expect(seen(r.results[0])).toEqual(seen(m.results[0]))
        expect(r.allowed).toBe(false)
        clock.advance(1)
      }
      const [m, r] = await both((s) => s.take('k', [one], 1))
      expect(seen(r.results[0])).toEqual(seen(m.results[0]))
      expect(r.allowed).toBe(true)
    })
  })

  describe('idle credit: 1 of 3 left, then 7 per second (proportional: 7/3 of a permit)', () => {
    it.each([
      ['proportional', 2],
      ['as-is', 1],
      ['additive', 5],
      ['reset', 7],
    ] as const)('%s: %d available, never above the new capacity', async (carry, available) => {
      const clock = new ManualClock(2_000_000.5)
      const { both } = twin(clock)
      const three = policy.tokenBucket('api', { limit: 3, window: 1000 })
      const seven = withCarry(policy.tokenBucket('api', { limit: 7, window: 1000 }), carry)
      await both((s) => s.take('k', [three], 2))
      const [onMemory, onRedis] = await both((s) => s.get('k', [seven]))
      expect(seen(onRedis[0])).toEqual(seen(onMemory[0]))
      expect(onRedis[0]?.remaining).toBe(available)
      // An idle hour fills it to the new capacity, and no further.
      clock.advance(3_600_000)
      const [full] = await both((s) => s.get('k', [seven]))
      expect(full[0]?.remaining).toBe(7)
    })

    it('proportional is exact at 3 → 7: 1 permit is 7/3, so the third comes 2/3 of a permit later', async () => {
      const clock = new ManualClock(2_000_000.5)
      const { both } = twin(clock)
      const three = policy.tokenBucket('api', { limit: 3, window: 1000 })
      const seven = policy.tokenBucket('api', { limit: 7, window: 1000 })
      await both((s) => s.take('k', [three], 2))
      const [, refused] = await both((s) => s.take('k', [seven], 3))
      // 7/3 − 2 = 1/3 short of 3: 2/3 of a permit at 7 per second is 95.238… ms.
      expect(refused.results[0]?.retryAfterMs).toBe(95.239)
      clock.advance(95.238)
      const [m, r] = await both((s) => s.take('k', [seven], 3))
      expect(seen(r.results[0])).toEqual(seen(m.results[0]))
      expect(r.allowed).toBe(false)
      clock.advance(0.001)
      expect((await both((s) => s.take('k', [seven], 3))).map((t) => t.allowed)).toEqual([
        true,
        true,
      ])
    })

    it.each(MODES)('%s: a full bucket of 10 cut to 4 holds 4', async (carry) => {
      const clock = new ManualClock(0)
      const { both } = twin(clock)
      await both((s) => s.take('k', [policy.tokenBucket('api', { limit: 10, window: MINUTE })], 1))
      clock.advance(MINUTE)
      const four = withCarry(policy.tokenBucket('api', { limit: 4, window: MINUTE }), carry)
      const [onMemory, onRedis] = await both((s) => s.get('k', [four]))
      expect(seen(onRedis[0])).toEqual(seen(onMemory[0]))
      expect(onRedis[0]?.remaining).toBe(4)
    })
  })

  describe('leaky bucket: a permit taken at 3 per minute, then 6 per minute', () => {
    it.each([
      ['proportional', 10_000],
      ['as-is', 10_000],
      ['additive', 10_000],
      ['reset', 0],
    ] as const)('%s: the next permit in %d ms', async (carry, wait) => {
      const clock = new ManualClock(123_456.789)
      const { both } = twin(clock)
      await both((s) => s.take('k', [bucketPolicy('leaky-bucket', 3, MINUTE)], 1))
      const six = bucketPolicy('leaky-bucket', 6, MINUTE, carry)
      const [onMemory, onRedis] = await both((s) => s.get('k', [six]))
      expect(seen(onRedis[0])).toEqual(seen(onMemory[0]))
      expect(onRedis[0]?.retryAfterMs).toBe(wait)
    })
  })

  describe('warm-up bucket: keeps its age', () => {
    it.each(MODES)('%s: half-way through warm-up, the new spec is half warm too', async (carry) => {
      const clock = new ManualClock(0)
      const { both } = twin(clock)
      await both((s) => s.get('k', [bucketPolicy('warm-up', 30, 1000)]))
      clock.advance(15_000)
      const sixty = bucketPolicy('warm-up', 60, 1000, carry)
      // At age 15 s of 30 the interval is 2·T: a burst of 60·T / 2·T = 30 (a bucket made
      // now, cold at 3·T, would allow 20).
      const [onMemory, onRedis] = await both((s) => s.get('k', [sixty]))
      expect(seen(onRedis[0])).toEqual(seen(onMemory[0]))
      expect(onRedis[0]?.remaining).toBe(30)
      clock.advance(15_000)
      const [warm] = await both((s) => s.get('k', [sixty]))
      expect(warm[0]?.remaining).toBe(60)
    })
  })

  it('converts a key once, on its next touch; untouched keys stay as written; the last spec wins', async () => {
    const clock = new ManualClock(0)
    const { both } = twin(clock)
    const ten = policy.tokenBucket('api', { limit: 10, window: HOUR })
    const twenty = policy.tokenBucket('api', { limit: 20, window: HOUR })
    await both((s) => s.take('a', [ten], 5))
    await both((s) => s.take('b', [ten], 5))
    for (const [key, p, expected] of [
      ['a', twenty, 10],
      ['a', twenty, 10], // converting twice is converting once
      ['b', ten, 5], // "b" was never converted
      ['a', ten, 5], // "a" scales back
    ] as const) {
      const [onMemory, onRedis] = await both((s) => s.get(key, [p]))
      expect(seen(onRedis[0])).toEqual(seen(onMemory[0]))
      expect([key, onRedis[0]?.remaining]).toEqual([key, expected])
    }
  })

  it('converts exactly past 2^53: 10^10 a day to 7·10^9 a day, and a warm-up of a year', async () => {
    for (const [from, to] of [
      [
        policy.tokenBucket('api', { limit: 1e10, window: DAY, capacity: 3e9 }),
        policy.tokenBucket('api', { limit: 7e9, window: DAY, capacity: 5e9 }),
      ],
      [
        policy.warmUp('api', { limit: 1e10, window: DAY, warmUp: 365 * DAY }),
        policy.warmUp('api', { limit: 7e9, window: DAY, warmUp: 364 * DAY }),
      ],
    ] as const) {
      for (const carry of MODES) {
        const clock = new ManualClock(1_700_000_000_000.123)
        const { both } = twin(clock)
        await both((s) => s.take('k', [from], 1e9 + 7))
        clock.advance(12_345.678)
        const [onMemory, onRedis] = await both((s) => s.take('k', [withCarry(to, carry)], 3))
        expect([carry, seen(onRedis.results[0])]).toEqual([carry, seen(onMemory.results[0])])
        expect(onRedis.results[0]?.receipt).toBe(onMemory.results[0]?.receipt)
        await both((s) => s.force('k', [from], 4e9))
        const [debtMemory, debtRedis] = await both((s) => s.get('k', [withCarry(to, carry)]))
        expect([carry, seen(debtRedis[0])]).toEqual([carry, seen(debtMemory[0])])
      }
    }
  })

  // Specs far apart (limits to 10^12, windows from 1 ms to 30 days, capacities to 10^9):
  // the carry's integers pass 2^53, where the Lua port computes in limbs what the kernel
  // computes in BigInts.
  it('converts any spec into any other exactly as the memory store does (fast-check)', async () => {
    const spec = fc.record({
      algorithm: fc.constantFrom(...BUCKETS),
      limit: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 1e12 })),
      window: fc.oneof(fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 30 * DAY })),
      capacity: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 1e9 })),
      warmUp: fc.integer({ min: 1, max: 30 * DAY }),
    })
    // Specs the validation accepts: τ (window / limit · capacity, three times that cold)
    // within 2^53 µs.
    const valid = (s: { limit: number; window: number; capacity: number }) =>
      ((3 * s.window * 1000) / s.limit) * s.capacity <= 2 ** 52
    await fc.assert(
      fc.asyncProperty(
        spec.filter(valid),
        spec.filter(valid),
        fc.constantFrom(...MODES),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 3, noNaN: true }),
        fc.integer({ min: 0, max: 100_000_000 }),
        async (from, to, carry, used, owed, later) => {
          const clock = new ManualClock(1_700_000_000_000.5)
          const { both } = twin(clock)
          const old = bucketPolicy(from.algorithm, from.limit, from.window, 'proportional', from)
          const next = bucketPolicy(from.algorithm, to.limit, to.window, carry, to)
          const capacity = from.algorithm === 'leaky-bucket' ? 1 : from.capacity
          const take = Math.max(1, Math.floor(used * capacity))
          await both((s) => s.take('k', [old], take))
          const debt = Math.floor(owed * capacity)
          if (debt > 0) await both((s) => s.force('k', [old], debt))
          clock.advance(later / 1000)
          const [onMemory, onRedis] = await both((s) => s.take('k', [next], 1))
          expect(seen(onRedis.results[0])).toEqual(seen(onMemory.results[0]))
          expect(onRedis.results[0]?.receipt).toBe(onMemory.results[0]?.receipt)
        },
      ),
      { numRuns: 200 },
    )
  })

  // Three specs of one name (a rolling deploy: limit, window and capacity change, and a
  // penalty is added) touched in any order, with any mode, at any time: Redis answers every
  // call as the memory store does.
  it('answers any interleaving of three specs as the memory store does (fast-check)', async () => {
    const op = fc.record({
      kind: fc.constantFrom('take', 'take', 'take', 'get', 'force', 'refund'),
      spec: fc.constantFrom(0, 1, 2),
      carry: fc.constantFrom(...MODES),
      cost: fc.integer({ min: 1, max: 5 }),
      advance: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 40_000 }),
        fc.double({ min: 0, max: 5_000, noNaN: true }),
      ),
    })
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...BUCKETS),
        fc.array(op, { minLength: 1, maxLength: 25 }),
        async (algorithm, ops) => {
          const clock = new ManualClock(5_000_000.125)
          const { both } = twin(clock)
          const specs = [
            [6, MINUTE, { capacity: 6 }],
            [7, 45_000, { capacity: 3, warmUp: 20_000 }],
            [6, MINUTE, { capacity: 9, block: { for: 20_000, after: 2 } }],
          ] as const
          const receipts: (number | undefined)[] = [undefined, undefined, undefined]
          for (const { kind, spec, carry, cost, advance } of ops) {
            clock.advance(advance)
            const [limit, window, more] = specs[spec]!
            const p = bucketPolicy(algorithm, limit, window, carry, more)
            let results: [readonly PolicyResult[], readonly PolicyResult[]] | undefined
            if (kind === 'take') {
              const [m, r] = await both((s) => s.take('k', [p], cost))
              receipts[spec] = r.results[0]?.receipt
              expect(m.results[0]?.receipt).toBe(r.results[0]?.receipt)
              results = [m.results, r.results]
            } else if (kind === 'get') {
              results = await both((s) => s.get('k', [p]))
            } else if (kind === 'force') {
              results = await both((s) => s.force('k', [p], cost))
            } else {
              await both((s) => s.refund('k', [p], cost, [receipts[spec]]))
              results = await both((s) => s.get('k', [p]))
            }
            expect(seen(results[1][0])).toEqual(seen(results[0][0]))
          }
        },
      ),
      { numRuns: 150 },
    )
  })

  // A token bucket's one-policy script: GET, then SETRANGE of tat while the key's expiry
  // covers it (else SET), as before the spec was kept; one string compare finds the spec
  // unchanged. On a test's clock keys are written without an expiry (lib/clock.lua), so
  // every take of an unchanged spec is a SETRANGE, however slowly the machine runs.
  it('token bucket: no extra Redis command per decision when nothing changed', async () => {
    const server = await startRedisServer()
    try {
      const admin = connect({ port: server.port })
      const store = redisStore({
        client: connect({ port: server.port }),
        timeout: '10s',
        clock: new ManualClock(1_000_000),
      })
      const calls = async () => {
        const stats = await admin.info('commandstats')
        const counted: Record<string, number> = {}
        for (const [, name, n] of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) {
          if (!['info', 'config', 'evalsha', 'eval', 'script'].includes(name!)) {
            counted[name!] = Number(n)
          }
        }
        await admin.config('RESETSTAT')
        return counted
      }
      const before = policy.tokenBucket('api', { limit: 1_000, window: DAY })
      const after = policy.tokenBucket('api', { limit: 2_000, window: DAY })
      await store.take('k', [before], 1)
      await calls()
      for (let i = 0; i < 10; i++) await store.take('k', [before], 1)
      expect(await calls()).toEqual({ get: 10, setrange: 10 })
      // The first take under the new spec converts and writes the whole value once...
      await store.take('k', [after], 1)
      expect(await calls()).toEqual({ get: 1, set: 1 })
      // ...and then it is the same again.
      for (let i = 0; i < 10; i++) await store.take('k', [after], 1)
      expect(await calls()).toEqual({ get: 10, setrange: 10 })
      // 11 of 1,000 taken is 22 of 2,000 (proportional), then 11 more.
      expect((await store.get('k', [after]))[0]?.remaining).toBe(2_000 - 33)
    } finally {
      await server.stop()
    }
  })
})
