import type { Carry } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import type { MaybePromise } from '../maybe-promise'
import {
  compilePolicy,
  compilePolicyList,
  concurrencyPolicy,
  type PolicyOptions,
  withCarry,
} from '../policy'
import type { Policy, Store } from '../store'

// A sliding window (10 slots) counts a permit until its slot has left the hour-long
// window: up to an hour and a tenth.
const LONGEST_WAIT_MS = 3_960_000

/** What a store under test can do besides being one. */
export interface StoreContractOptions {
  /**
   * Lets time pass for the store: a `ManualClock`'s `advance` for a store on one, a real
   * sleep (the default) for a store on a server's clock. Only a few tests use it, with
   * windows of a few hundred milliseconds.
   */
  advance?: (ms: number) => void | Promise<void>
  /**
   * Whether the store keeps a policy's state by name and carries it over to a changed spec
   * of the same algorithm (a reconfiguration), as the memory store does; else it keeps each
   * spec's state apart (by `Policy.id`). Default false.
   */
  carries?: boolean
  /**
   * The clock the store decides on, when the test moves it (a `ManualClock`): the contract
   * then also runs its rate tables, exact to the microsecond at 3 per second, 7 per 100 ms,
   * 10^9 and 10^10 a day. `advance` defaults to its `advance`.
   */
  clock?: {
    /** The store's time now, in milliseconds. */
    now(): MaybePromise<number>
    /** Moves the store's time forward by `ms`. */
    advance(ms: number): MaybePromise<void>
  }
}

/**
 * The rates of the tables: awkward ones (intervals of no whole number of microseconds)
 * and huge ones (10^10 a day is 8.64 µs a permit; its ticks pass 2^53). For each, what a
 * store must answer, worked out by hand:
 * - `interval`: T = window / limit rounded up to a whole µs, the wait for the next permit
 *   of an emptied bucket (3 per second: 333,333.3 µs → 333.334 ms).
 * - `second`: a token bucket's wait for the permit after that, taken at T rounded up:
 *   2T − ceil(T), rounded up (3 per second: 666,666.7 − 333,334 = 333,332.7 µs → 333.333
 *   ms). A leaky bucket holds no debt then, so its next is `interval` again.
 * - `slot`: a sliding window's slot (window / 10 slots); a permit counts until its slot
 *   has left the window, so permits taken at a slot's start free after window + slot.
 */
const RATE_TABLES = [
  { rate: '3 per second', limit: 3, window: 1000, interval: 333.334, second: 333.333, slot: 100 },
  { rate: '7 per 100 ms', limit: 7, window: 100, interval: 14.286, second: 14.286, slot: 10 },
  {
    rate: '10^9 a day',
    limit: 1e9,
    window: 86_400_000,
    interval: 0.087,
    second: 0.086,
    slot: 8_640_000,
  },
  {
    rate: '10^10 a day',
    limit: 1e10,
    window: 86_400_000,
    interval: 0.009,
    second: 0.009,
    slot: 8_640_000,
  },
] as const

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * The store contract, as one suite every store runs (like Bucket4j's TCK): memory here,
 * Redis in @sluice/redis, and any store written elsewhere (`@sluice/http/testing`). It uses
 * nothing but the `Store` interface, and most of its time-based expectations hold for a
 * store on its own clock: windows are an hour long, so the few milliseconds a test takes
 * never refill anything it counts. Tests of expiry let time pass with `options.advance`.
 * Given `options.clock` (the store on a clock the test moves), it also runs the rate tables:
 * every time-based algorithm but warm-up at 3 per second, 7 per 100 ms, 10^9 and 10^10 a
 * day, each answer compared exactly (a full bucket admits exactly its capacity, the next
 * permit comes at the exact microsecond, a window's at its end).
 *
 * @param makeStore Called once per test; each test uses fresh, unique keys.
 * @example
 * ```ts
 * runStoreContract('memoryStore', () => memoryStore())
 * ```
 */
export function runStoreContract(
  name: string,
  makeStore: () => Store | Promise<Store>,
  options: StoreContractOptions = {},
): void {
  let seq = 0
  const uniqueKey = (label: string) => `contract:${label}:${Date.now().toString(36)}:${++seq}`
  const policy = (options: PolicyOptions): Policy => compilePolicy(options, 'contract')
  const clock = options.clock
  const advance = options.advance ?? (clock ? (ms: number) => clock.advance(ms) : sleep)

  describe(`store contract: ${name}`, () => {
    const exhaustible = [
      { algorithm: 'sliding-window', limit: 3 },
      { algorithm: 'fixed-window', limit: 3 },
      { algorithm: 'token-bucket', limit: 3 },
    ] as const

    for (const options of exhaustible) {
      it(`${options.algorithm}: admits exactly the limit, then refuses with a wait`, async () => {
        const store = await makeStore()
        const p = policy({ ...options, window: '1h', name: options.algorithm })
        const key = uniqueKey(options.algorithm)
        const remaining: number[] = []
        for (let i = 0; i < 3; i++) {
          const taken = await store.take(key, [p], 1)
          expect(taken.allowed).toBe(true)
          expect(taken.results).toHaveLength(1)
          const [result] = taken.results
          expect(result?.policy.name).toBe(options.algorithm)
          expect(result?.allowed).toBe(true)
          expect(result?.limit).toBe(3)
          expect(result?.retryAfterMs).toBe(0)
          expect(result?.resetMs).toBeGreaterThan(0)
          expect(result?.resetMs).toBeLessThanOrEqual(LONGEST_WAIT_MS)
          remaining.push(result!.remaining)
        }
        expect(remaining).toEqual([2, 1, 0])
        const refused = await store.take(key, [p], 1)
        expect(refused.allowed).toBe(false)
        expect(refused.results[0]?.allowed).toBe(false)
        expect(refused.results[0]?.remaining).toBe(0)
        expect(refused.results[0]?.retryAfterMs).toBeGreaterThan(0)
        expect(refused.results[0]?.retryAfterMs).toBeLessThanOrEqual(LONGEST_WAIT_MS)
      })
    }

    it('leaky-bucket: admits one, then refuses for about one interval', async () => {
      const store = await makeStore()
      const p = policy({ algorithm: 'leaky-bucket', limit: 3, window: '1h', name: 'leaky' })
      const key = uniqueKey('leaky')
      expect((await store.take(key, [p], 1)).allowed).toBe(true)
      const refused = await store.take(key, [p], 1)
      expect(refused.allowed).toBe(false)
      // One interval is window / limit = 20 minutes; a few ms may have passed.
      expect(refused.results[0]?.retryAfterMs).toBeGreaterThan(1_190_000)
      expect(refused.results[0]?.retryAfterMs).toBeLessThanOrEqual(1_200_000)
    })

    it('warm-up: a cold limiter admits at least one and never more than its capacity', async () => {
      const store = await makeStore()
      const p = policy({ algorithm: 'warm-up', limit: 6, window: '1h', warmUp: '1h', name: 'warm' })
      const key = uniqueKey('warm')
      let admitted = 0
      for (let i = 0; i < 10; i++) if ((await store.take(key, [p], 1)).allowed) admitted++
      expect(admitted).toBeGreaterThanOrEqual(1)
      expect(admitted).toBeLessThan(6)
    })

    it('takes `cost` permits at once and refuses a cost that does not fit, taking nothing', async () => {
      const store = await makeStore()
      const p = policy({ limit: 5, window: '1h', name: 'cost' })
      const key = uniqueKey('cost')
      expect((await store.take(key, [p], 3)).results[0]?.remaining).toBe(2)
      const refused = await store.take(key, [p], 3)
      expect(refused.allowed).toBe(false)
      expect(refused.results[0]?.remaining).toBe(2)
      const fits = await store.take(key, [p], 2)
      expect(fits.allowed).toBe(true)
      expect(fits.results[0]?.remaining).toBe(0)
    })

    it('refuses a cost above the limit forever (retryAfterMs Infinity) without consuming', async () => {
      const store = await makeStore()
      const p = policy({ algorithm: 'token-bucket', limit: 5, window: '1h', name: 'huge' })
      const key = uniqueKey('huge')
      const refused = await store.take(key, [p], 6)
      expect(refused.allowed).toBe(false)
      expect(refused.results[0]?.retryAfterMs).toBe(Number.POSITIVE_INFINITY)
      expect((await store.take(key, [p], 5)).allowed).toBe(true)
    })

    it('checks several policies atomically: one refusal takes nothing from the others', async () => {
      const store = await makeStore()
      const [hourly, burst] = compilePolicyList(
        [
          { name: 'hourly', limit: 5, window: '1h' },
          { name: 'burst', limit: 2, window: '1h', algorithm: 'fixed-window' },
        ],
        'contract',
      ) as [Policy, Policy]
      const key = uniqueKey('atomic')
      expect((await store.take(key, [hourly, burst], 1)).allowed).toBe(true)
      expect((await store.take(key, [hourly, burst], 1)).allowed).toBe(true)
      const refused = await store.take(key, [hourly, burst], 1)
      expect(refused.allowed).toBe(false)
      expect(refused.results.map((r) => [r.policy.name, r.allowed, r.remaining])).toEqual([
        ['hourly', true, 3],
        ['burst', false, 0],
      ])
      const [state] = await store.get(key, [hourly])
      expect(state?.remaining).toBe(3)
    })

    it('refunds every policy of a multi-policy take, never above fresh', async () => {
      const store = await makeStore()
      const policies = compilePolicyList(
        [
          { name: 'a', limit: 4, window: '1h' },
          { name: 'b', limit: 3, window: '1h', algorithm: 'token-bucket' },
        ],
        'contract',
      )
      const key = uniqueKey('refund')
      const taken = await store.take(key, policies, 2)
      const receipts = taken.results.map((r) => r.receipt)
      expect(receipts.every((r) => typeof r === 'number')).toBe(true)
      expect((await store.get(key, policies)).map((r) => r.remaining)).toEqual([2, 1])
      await store.refund(key, policies, 1, receipts)
      expect((await store.get(key, policies)).map((r) => r.remaining)).toEqual([3, 2])
      await store.refund(key, policies, 5, receipts)
      expect((await store.get(key, policies)).map((r) => r.remaining)).toEqual([4, 3])
      // Without receipts a refund is taken to be of the latest permits.
      await store.take(key, policies, 1)
      await store.refund(key, policies, 1)
      expect((await store.get(key, policies)).map((r) => r.remaining)).toEqual([4, 3])
    })

    it('holds concurrency slots until released, and a second release of a lease is a no-op', async () => {
      const store = await makeStore()
      const slots = concurrencyPolicy('slots', 2)
      const key = uniqueKey('slots')
      const first = await store.take(key, [slots], 1)
      const second = await store.take(key, [slots], 1)
      expect(first.allowed && second.allowed).toBe(true)
      expect(second.results[0]?.remaining).toBe(0)
      const lease = first.results[0]?.lease
      expect(lease?.permits).toBe(1)
      expect(second.results[0]?.lease?.id).not.toBe(lease?.id)
      const full = await store.take(key, [slots], 1)
      expect(full.allowed).toBe(false)
      expect(full.results[0]?.lease).toBeUndefined()
      await store.release(key, slots, lease!)
      await store.release(key, slots, lease!)
      expect((await store.get(key, [slots]))[0]?.remaining).toBe(1)
      expect((await store.take(key, [slots], 1)).allowed).toBe(true)
      expect((await store.take(key, [slots], 1)).allowed).toBe(false)
    })

    it('treats a concurrency policy atomically with time-based ones', async () => {
      const store = await makeStore()
      const slots = concurrencyPolicy('slots', 1)
      const rate = policy({ limit: 10, window: '1h', name: 'rate' })
      const key = uniqueKey('mixed')
      const first = await store.take(key, [rate, slots], 1)
      expect(first.allowed).toBe(true)
      expect(first.results[1]?.lease).toBeDefined()
      const refused = await store.take(key, [rate, slots], 1)
      expect(refused.allowed).toBe(false)
      expect(refused.results.map((r) => r.allowed)).toEqual([true, false])
      expect((await store.get(key, [rate]))[0]?.remaining).toBe(9)
      await store.release(key, slots, first.results[1]!.lease!)
      expect((await store.take(key, [rate, slots], 1)).allowed).toBe(true)
    })

    it('get reports state without taking, fresh for an unknown key', async () => {
      const store = await makeStore()
      const p = policy({ limit: 4, window: '1h', name: 'get' })
      const key = uniqueKey('get')
      const [fresh] = await store.get(key, [p])
      expect(fresh).toMatchObject({ allowed: true, limit: 4, remaining: 4, retryAfterMs: 0 })
      await store.take(key, [p], 3)
      expect((await store.get(key, [p]))[0]?.remaining).toBe(1)
      expect((await store.get(key, [p]))[0]?.remaining).toBe(1)
    })

    it('reset forgets a key, under all policies or only the ones given', async () => {
      const store = await makeStore()
      const a = policy({ limit: 2, window: '1h', name: 'reset-a' })
      const b = policy({ limit: 2, window: '1h', name: 'reset-b' })
      const key = uniqueKey('reset')
      await store.take(key, [a], 2)
      await store.take(key, [b], 2)
      await store.reset(key, [a])
      expect((await store.get(key, [a, b])).map((r) => r.remaining)).toEqual([2, 0])
      await store.reset(key)
      expect((await store.get(key, [a, b])).map((r) => r.remaining)).toEqual([2, 2])
    })

    it('keeps keys and policy names apart', async () => {
      const store = await makeStore()
      const a = policy({ limit: 1, window: '1h', name: 'iso-a' })
      const b = policy({ limit: 1, window: '1h', name: 'iso-b' })
      const one = uniqueKey('iso')
      const two = uniqueKey('iso')
      expect((await store.take(one, [a], 1)).allowed).toBe(true)
      expect((await store.take(one, [a], 1)).allowed).toBe(false)
      expect((await store.take(two, [a], 1)).allowed).toBe(true)
      expect((await store.take(one, [b], 1)).allowed).toBe(true)
    })

    it('admits exactly the limit when takes race', async () => {
      const store = await makeStore()
      const p = policy({ algorithm: 'fixed-window', limit: 7, window: '1h', name: 'race' })
      const key = uniqueKey('race')
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, () => Promise.resolve(store.take(key, [p], 1))),
      )
      expect(outcomes.filter((o) => o.allowed)).toHaveLength(7)
    })

    it('never mixes the state of policies of different algorithms, named alike or not', async () => {
      const store = await makeStore()
      const key = uniqueKey('compose')
      // Issue 10: one name ("default") for two specs shared one Redis key.
      const fixed = policy({ name: 'same', algorithm: 'fixed-window', limit: 1, window: '1h' })
      const sliding = policy({ name: 'same', algorithm: 'sliding-window', limit: 1, window: '1h' })
      expect((await store.take(key, [fixed], 1)).allowed).toBe(true)
      expect((await store.take(key, [sliding], 1)).allowed).toBe(true)
      expect((await store.take(key, [fixed], 1)).allowed).toBe(false)
      expect((await store.take(key, [sliding], 1)).allowed).toBe(false)
      // Unnamed policies get names from their spec; equal specs are one policy.
      const a = policy({ limit: 2, window: '1h' })
      const b = policy({ limit: 2, window: '1h' })
      const c = policy({ limit: 2, window: '1h', algorithm: 'token-bucket' })
      const d = policy({ limit: 3, window: '1h' })
      expect([a.name, c.name, d.name]).toEqual(['2-per-1h', '2-per-1h-token-bucket', '3-per-1h'])
      expect((await store.take(key, [a], 1)).results[0]?.remaining).toBe(1)
      expect((await store.take(key, [b], 1)).results[0]?.remaining).toBe(0)
      expect((await store.take(key, [c], 1)).results[0]?.remaining).toBe(1)
      expect((await store.take(key, [d], 1)).results[0]?.remaining).toBe(2)
    })

    if (options.carries === true) {
      it("carries a name's state over to a changed spec of its algorithm, the last spec winning", async () => {
        const store = await makeStore()
        const key = uniqueKey('carry')
        const one = policy({ name: 'same', algorithm: 'fixed-window', limit: 1, window: '1h' })
        const three = policy({ name: 'same', algorithm: 'fixed-window', limit: 3, window: '1h' })
        expect((await store.take(key, [one], 1)).allowed).toBe(true)
        // All of 1 used is all of 3 used (proportional): no fresh budget under the new spec.
        const under3 = await store.take(key, [three], 1)
        expect([under3.allowed, under3.results[0]?.remaining]).toEqual([false, 0])
        expect((await store.take(key, [one], 1)).allowed).toBe(false)
        // Bulkheads of different sizes under one name share their slots; each take is
        // checked against its own max.
        const two = concurrencyPolicy('pool', 2)
        const single = concurrencyPolicy('pool', 1)
        expect((await store.take(key, [single], 1)).allowed).toBe(true)
        expect((await store.take(key, [two], 1)).results[0]?.remaining).toBe(0)
        expect((await store.take(key, [single], 1)).allowed).toBe(false)
      })

      // Buckets in each carry mode, with hour-long windows: the few ms a store on a
      // server's clock lets pass refill a negligible part of a permit (one takes 8.6 min).
      const bucket = (limit: number, carry: Carry, capacity?: number) =>
        withCarry(
          policy({
            name: 'bucket',
            algorithm: 'token-bucket',
            limit,
            window: '1h',
            ...(capacity === undefined ? {} : { capacity }),
          }),
          carry,
        )

      for (const [carry, up, down] of [
        ['proportional', 2, 3],
        ['as-is', 1, 4],
        ['additive', 5, 3],
        ['reset', 7, 4],
      ] as const) {
        it(`token bucket, ${carry}: 1 of 3 left becomes ${up} of 7; 9 of 10 left becomes ${down} of 4 (never above the new capacity)`, async () => {
          const store = await makeStore()
          const key = uniqueKey(`credit-${carry}`)
          // Proportional ⌊1·7/3⌋, as-is 1, additive 1 + 7 − 3, reset a full 7.
          expect((await store.take(key, [bucket(3, carry)], 2)).allowed).toBe(true)
          expect((await store.get(key, [bucket(7, carry)]))[0]?.remaining).toBe(up)
          // Proportional ⌊9·4/10⌋, as-is min(9, 4), additive 9 + 4 − 10, reset a full 4.
          const other = uniqueKey(`cut-${carry}`)
          expect((await store.take(other, [bucket(10, carry)], 1)).allowed).toBe(true)
          expect((await store.get(other, [bucket(4, carry)]))[0]?.remaining).toBe(down)
        })

        it(`token bucket, ${carry}: a debt ${carry === 'reset' ? 'is forgiven' : 'stays owed, paid off at the same instant'}`, async () => {
          const store = await makeStore()
          const key = uniqueKey(`debt-${carry}`)
          // 3 taken and 2 forced at 3 an hour (one per 20 min): 5 permits, 100 min ahead,
          // 40 min past the capacity's 60. At 6 an hour the debt is paid off at 40 min still,
          // and the next permit is due 10 min later: 40 + 60 + 10 − 60 = 50 min.
          expect((await store.take(key, [bucket(3, carry)], 3)).allowed).toBe(true)
          await store.force(key, [bucket(3, carry)], 2)
          const [after] = await store.get(key, [bucket(6, carry)])
          if (carry === 'reset') {
            expect(after?.remaining).toBe(6)
            return
          }
          expect(after?.remaining).toBe(0)
          expect(after?.retryAfterMs).toBeLessThanOrEqual(50 * 60_000)
          expect(after?.retryAfterMs).toBeGreaterThan(49 * 60_000)
        })
      }

      it('token bucket, proportional: 3 → 7 is exact, the fraction of a permit kept', async () => {
        const store = await makeStore()
        const key = uniqueKey('exact')
        await store.take(key, [bucket(3, 'proportional')], 2)
        // 1 permit of 3 is 7/3 of 7: 2, and 1/3 of a permit, so 3 permits are 2/3 of a
        // permit away: 2/3 · 3,600,000 / 7 ms = 342,857.142… ms (less what has refilled).
        const [seven] = await store.get(key, [bucket(7, 'proportional')])
        expect(seven?.remaining).toBe(2)
        const refused = await store.take(key, [bucket(7, 'proportional')], 3)
        expect(refused.allowed).toBe(false)
        expect(refused.results[0]?.retryAfterMs).toBeLessThanOrEqual(342_857.143)
        expect(refused.results[0]?.retryAfterMs).toBeGreaterThan(342_857.143 - 60_000)
      })
    } else {
      it('keeps the state of specs of one name apart', async () => {
        const store = await makeStore()
        const key = uniqueKey('apart')
        const fixed = policy({ name: 'same', algorithm: 'fixed-window', limit: 1, window: '1h' })
        const bigger = policy({ name: 'same', algorithm: 'fixed-window', limit: 3, window: '1h' })
        expect((await store.take(key, [fixed], 1)).allowed).toBe(true)
        expect((await store.take(key, [bigger], 1)).results[0]?.remaining).toBe(2)
        expect((await store.take(key, [fixed], 1)).allowed).toBe(false)
        // Bulkheads of different sizes under one name are two bulkheads.
        const two = concurrencyPolicy('pool', 2)
        const one = concurrencyPolicy('pool', 1)
        expect((await store.take(key, [one], 1)).allowed).toBe(true)
        expect((await store.take(key, [two], 1)).results[0]?.remaining).toBe(1)
        expect((await store.take(key, [one], 1)).allowed).toBe(false)
      })
    }

    for (const algorithm of ['fixed-window', 'sliding-window', 'token-bucket'] as const) {
      it(`${algorithm}: a refund after its window never credits a later one`, async () => {
        const store = await makeStore()
        const p = policy({ algorithm, limit: 1, window: 1000, name: `late-${algorithm}` })
        const key = uniqueKey('late')
        const slow = await store.take(key, [p], 1)
        expect(slow.allowed).toBe(true)
        // The slow request is still running when its window (slot, bucket period) passes.
        // A store on a server's clock moves on while the test waits: the second take lands
        // at the start of a fixed window (its windows are aligned to the clock, the first
        // take anywhere in one), so that the last take, a few round trips later, is in the
        // same window however loaded the machine; a sliding window's permit counts until
        // its slot (100 ms) leaves the window.
        const passes =
          algorithm === 'fixed-window'
            ? slow.results[0]!.resetMs + 20
            : algorithm === 'sliding-window'
              ? 1150
              : 1020
        await advance(passes)
        expect((await store.take(key, [p], 1)).allowed).toBe(true)
        await store.refund(key, [p], 1, [slow.results[0]?.receipt])
        const next = await store.take(key, [p], 1)
        expect(next.allowed).toBe(false)
        expect(next.results[0]?.remaining).toBe(0)
      })
    }

    it('blocks a key refused `after` times within the window, for `for`, without extending', async () => {
      const store = await makeStore()
      const p = policy({
        algorithm: 'fixed-window',
        limit: 1,
        window: '1h',
        name: 'penalty',
        block: { for: 400, after: 2 },
      })
      const key = uniqueKey('block')
      expect((await store.take(key, [p], 1)).allowed).toBe(true)
      const first = await store.take(key, [p], 1)
      expect([first.allowed, first.results[0]?.blocked ?? false]).toEqual([false, false])
      const second = await store.take(key, [p], 1)
      expect([second.allowed, second.results[0]?.blocked]).toEqual([false, true])
      // The refusal that starts the block reports it, waiting the longer of the window's
      // own wait and the block (a store on the wall clock may be near the end of its hour).
      expect(second.results[0]?.retryAfterMs).toBeGreaterThanOrEqual(400)
      expect(second.results[0]?.retryAfterMs).toBe(second.results[0]?.resetMs)
      const other = uniqueKey('block')
      expect((await store.take(other, [p], 1)).allowed).toBe(true)
      await advance(150)
      const during = await store.take(key, [p], 1)
      expect([during.allowed, during.results[0]?.blocked, during.results[0]?.remaining]).toEqual([
        false,
        true,
        0,
      ])
      const [state] = await store.get(key, [p])
      expect([state?.allowed, state?.blocked, state?.remaining]).toEqual([false, true, 0])
      await advance(300)
      // The block is over (requests during it did not extend it); the budget is still spent.
      const after = await store.take(key, [p], 1)
      expect([after.allowed, after.results[0]?.blocked ?? false]).toEqual([false, false])
    })

    it('a block holds even when the budget would admit, and reports its time left', async () => {
      const store = await makeStore()
      const p = policy({
        algorithm: 'fixed-window',
        limit: 1,
        window: 300,
        name: 'penalty-short',
        block: { for: '1h' },
      })
      const key = uniqueKey('block')
      expect((await store.take(key, [p], 1)).allowed).toBe(true)
      const starts = await store.take(key, [p], 1)
      expect(starts.results[0]?.blocked).toBe(true)
      expect(starts.results[0]?.retryAfterMs).toBeGreaterThan(3_500_000)
      await advance(350)
      const still = await store.take(key, [p], 1)
      expect([still.allowed, still.results[0]?.blocked]).toEqual([false, true])
      expect(still.results[0]?.retryAfterMs).toBeLessThan(starts.results[0]!.retryAfterMs)
      await store.reset(key, [p])
      expect((await store.take(key, [p], 1)).allowed).toBe(true)
    })

    if (clock !== undefined) {
      /** `[allowed, remaining, resetMs, retryAfterMs]` of a one-policy call. */
      const row = async (
        answer: MaybePromise<{ allowed: boolean; results: readonly unknown[] }>,
      ) => {
        const { allowed, results } = await answer
        const r = results[0] as { remaining: number; resetMs: number; retryAfterMs: number }
        return [allowed, r.remaining, r.resetMs, r.retryAfterMs]
      }
      const read = async (store: Store, key: string, p: Policy) => {
        const [r] = await store.get(key, [p])
        return [r!.allowed, r!.remaining, r!.resetMs, r!.retryAfterMs]
      }
      /** Moves the clock to the next start of a `windowMs` window (windows start at zero). */
      const toWindowStart = async (windowMs: number) => {
        const now = Math.round((await clock.now()) * 1000)
        const window = Math.round(windowMs * 1000)
        const into = now % window
        if (into !== 0) await clock.advance((window - into) / 1000)
      }

      for (const { rate, limit, window, interval, second, slot } of RATE_TABLES) {
        it(`token-bucket at ${rate}: a full bucket admits exactly its capacity, the next permit at the exact µs`, async () => {
          const store = await makeStore()
          const p = policy({ algorithm: 'token-bucket', limit, window, name: 'table-tb' })
          const key = uniqueKey('table-tb')
          expect(await row(store.take(key, [p], limit + 1))).toEqual([
            false,
            limit,
            0,
            Number.POSITIVE_INFINITY,
          ])
          expect(await row(store.take(key, [p], limit))).toEqual([true, 0, interval, 0])
          expect(await row(store.take(key, [p], 1))).toEqual([false, 0, interval, interval])
          await clock.advance(interval - 0.001)
          expect(await row(store.take(key, [p], 1))).toEqual([false, 0, 0.001, 0.001])
          await clock.advance(0.001)
          expect(await row(store.take(key, [p], 1))).toEqual([true, 0, second, 0])
          expect(await row(store.take(key, [p], 1))).toEqual([false, 0, second, second])
          // A window later every permit is back.
          await clock.advance(window)
          expect(await read(store, key, p)).toEqual([true, limit, 0, 0])
        })

        it(`leaky-bucket at ${rate}: one permit, the next at the exact µs`, async () => {
          const store = await makeStore()
          const p = policy({ algorithm: 'leaky-bucket', limit, window, name: 'table-lb' })
          const key = uniqueKey('table-lb')
          expect(await row(store.take(key, [p], 1))).toEqual([true, 0, interval, 0])
          expect(await row(store.take(key, [p], 1))).toEqual([false, 0, interval, interval])
          await clock.advance(interval - 0.001)
          expect(await row(store.take(key, [p], 1))).toEqual([false, 0, 0.001, 0.001])
          // Taken at the instant it was free, so the next is a whole interval on (unlike
          // a token bucket's, whose debt kept the fraction of a microsecond).
          await clock.advance(0.001)
          expect(await row(store.take(key, [p], 1))).toEqual([true, 0, interval, 0])
        })

        it(`fixed-window at ${rate}: exactly the limit per window, the next at the window's end`, async () => {
          const store = await makeStore()
          const p = policy({ algorithm: 'fixed-window', limit, window, name: 'table-fw' })
          const key = uniqueKey('table-fw')
          await toWindowStart(window)
          expect(await row(store.take(key, [p], limit))).toEqual([true, 0, window, 0])
          expect(await row(store.take(key, [p], 1))).toEqual([false, 0, window, window])
          await clock.advance(window - 0.001)
          expect(await row(store.take(key, [p], 1))).toEqual([false, 0, 0.001, 0.001])
          await clock.advance(0.001)
          expect(await row(store.take(key, [p], 1))).toEqual([true, limit - 1, window, 0])
        })

        it(`sliding-window at ${rate}: exactly the limit, free once their slot has left the window`, async () => {
          const store = await makeStore()
          const p = policy({ algorithm: 'sliding-window', limit, window, name: 'table-sw' })
          const key = uniqueKey('table-sw')
          await toWindowStart(window)
          const free = window + slot
          expect(await row(store.take(key, [p], limit))).toEqual([true, 0, free, 0])
          expect(await row(store.take(key, [p], 1))).toEqual([false, 0, free, free])
          await clock.advance(free - 0.001)
          expect(await row(store.take(key, [p], 1))).toEqual([false, 0, 0.001, 0.001])
          await clock.advance(0.001)
          expect(await row(store.take(key, [p], 1))).toEqual([true, limit - 1, window + slot, 0])
        })
      }
    }

    it('resetAll forgets every key', async () => {
      const store = await makeStore()
      const p = policy({ limit: 1, window: '1h', name: 'reset-all' })
      const one = uniqueKey('all')
      const two = uniqueKey('all')
      await store.take(one, [p], 1)
      await store.take(two, [p], 1)
      await store.resetAll()
      expect((await store.get(one, [p]))[0]?.remaining).toBe(1)
      expect((await store.take(two, [p], 1)).allowed).toBe(true)
    })
  })
}
