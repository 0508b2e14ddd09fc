import { ManualClock } from '@sluice/core'
import type { Policy } from '@sluice/http'
import { memoryStore } from '@sluice/keyed'
import { beforeEach, expect, it } from 'vitest'
import { type RedisStore, redisStore, stateKey } from '../src/index'
import { connect, DAY, describeRedis, HOUR, policy, sleep, uniquePrefix } from './helpers'
import { startRedisServer } from './redis-server'

// Two stores on one redis-server: `store` on Redis's own clock (TIME), as in production,
// whose tests use windows where the few milliseconds a test takes cannot matter (N per
// hour or per day) and observe a refill with a bounded real wait of the retryAfterMs the
// store itself announced; and `exact` on a ManualClock (the `clock` option), whose tests
// assert every number.

const redis = connect()
let prefix: string
let store: RedisStore
let clock: ManualClock
let exact: RedisStore

beforeEach(() => {
  prefix = uniquePrefix()
  store = redisStore({ client: redis, prefix })
  clock = new ManualClock(1_800_000_000_000)
  // A busy machine must not turn a slow answer into onError's.
  exact = redisStore({
    client: redis,
    prefix: uniquePrefix(),
    clock,
    onError: 'deny',
    timeout: '10s',
  })
})

async function admitted(key: string, policies: Policy[], attempts: number): Promise<number> {
  let count = 0
  for (let i = 0; i < attempts; i++) if ((await store.take(key, policies, 1)).allowed) count++
  return count
}

describeRedis('token bucket', () => {
  const hourly = policy.tokenBucket('tb', { limit: 3, window: HOUR })

  it('admits exactly capacity from full, then rejects with the time to the next permit', async () => {
    const seen = []
    for (let i = 0; i < 4; i++) {
      const { allowed, results } = await exact.take('k', [hourly], 1)
      const { remaining, resetMs, retryAfterMs } = results[0]!
      seen.push([allowed, remaining, resetMs, retryAfterMs])
    }
    // T = 20 min; the reset is until one more permit (draft -10's t), not until full.
    expect(seen).toEqual([
      [true, 2, 1_200_000, 0],
      [true, 1, 1_200_000, 0],
      [true, 0, 1_200_000, 0],
      [false, 0, 1_200_000, 1_200_000],
    ])
    clock.advance(1_199_999.999)
    expect((await exact.take('k', [hourly], 1)).results[0]!.retryAfterMs).toBe(0.001)
    clock.advance(0.001)
    expect((await exact.take('k', [hourly], 1)).results[0]!.remaining).toBe(0)
  })

  it.each([
    [3, 1_000],
    [7, 100],
    [3, 10],
    [13, 1_000],
    [97, 60_000],
    [1_000, 1_000],
    [999_983, DAY],
    [100_000_000, DAY],
    [1_000_000_000, DAY],
    [10_000_000_000, DAY],
  ])(
    'admits a full bucket of %i per %i ms in one take of exactly capacity, and one more per interval',
    async (limit, window) => {
      const p = policy.tokenBucket('tb', { limit, window })
      const full = await exact.take('k', [p], limit)
      expect([full.allowed, full.results[0]!.remaining]).toEqual([true, 0])
      const refused = await exact.take('k', [p], 1)
      const wait = refused.results[0]!.retryAfterMs
      expect([refused.allowed, refused.results[0]!.resetMs]).toEqual([false, wait])
      // One interval, window / limit, rounded up to a whole microsecond.
      expect(wait).toBe(Math.ceil((window * 1000) / limit) / 1000)
      clock.advance(wait)
      expect((await exact.take('k', [p], 1)).allowed).toBe(true)
      expect((await exact.take('k', [p], 1)).allowed).toBe(false)
    },
  )

  it('a token bucket of 10^10 per day takes and refunds exactly: 10 GB a day, by the byte', async () => {
    const p = policy.tokenBucket('bytes', { limit: 1e10, window: DAY })
    const first = await exact.take('k', [p], 4_000_000_000)
    expect(first.results[0]).toMatchObject({ allowed: true, remaining: 6_000_000_000 })
    // T = 8.64 µs a byte: one more is free 9 µs from now (waits are whole microseconds).
    expect(first.results[0]!.resetMs).toBe(0.009)
    clock.advance(1_000)
    // A second frees 10^10 / 86,400 = 115,740.74 bytes: 115,740 whole ones, the next 3 µs on.
    expect((await exact.get('k', [p]))[0]!.remaining).toBe(6_000_115_740)
    await exact.refund('k', [p], 1_000_000_000, [first.results[0]!.receipt])
    expect((await exact.get('k', [p]))[0]!.remaining).toBe(7_000_115_740)
    expect((await exact.take('k', [p], 7_000_115_741)).results[0]).toMatchObject({
      allowed: false,
      retryAfterMs: 0.003,
    })
  })

  it('caps a burst at capacity below the rate, and refuses forever more than capacity', async () => {
    const p = policy.tokenBucket('tb', { limit: 100, window: HOUR, capacity: 5 })
    expect((await store.get('k', [p]))[0]!.remaining).toBe(5)
    const tooMany = await store.take('k', [p], 6)
    expect(tooMany.allowed).toBe(false)
    expect(tooMany.results[0]!.retryAfterMs).toBe(Number.POSITIVE_INFINITY)
    expect(await admitted('k', [p], 7)).toBe(5)
  })

  it('refills: after the announced retryAfterMs the next permit passes', async () => {
    const p = policy.tokenBucket('tb', { limit: 4, window: 200 })
    expect((await store.take('k', [p], 4)).allowed).toBe(true)
    const rejected = await store.take('k', [p], 1)
    expect(rejected.allowed).toBe(false)
    const wait = rejected.results[0]!.retryAfterMs
    expect(wait).toBeGreaterThan(0)
    expect(wait).toBeLessThanOrEqual(50)
    await sleep(wait + 5)
    expect((await store.take('k', [p], 1)).allowed).toBe(true)
  })

  it('refund gives permits back, never beyond a full bucket', async () => {
    expect(await admitted('k', [hourly], 3)).toBe(3)
    await store.refund('k', [hourly], 2)
    expect((await store.get('k', [hourly]))[0]!.remaining).toBe(2)
    await store.refund('k', [hourly], 10)
    expect((await store.get('k', [hourly]))[0]!.remaining).toBe(3)
    expect(await admitted('k', [hourly], 4)).toBe(3)
  })
})

describeRedis('leaky bucket', () => {
  const p = policy.leakyBucket('lb', { limit: 10, window: HOUR })

  it('admits one at a time: a fresh bucket holds a single permit', async () => {
    expect((await exact.get('k', [p]))[0]!.remaining).toBe(1)
    const taken = []
    for (let i = 0; i < 3; i++) taken.push((await exact.take('k', [p], 1)).allowed)
    expect(taken).toEqual([true, false, false])
    // T = 6 min.
    const rejected = await exact.take('k', [p], 1)
    expect(rejected.results[0]).toMatchObject({ resetMs: 360_000, retryAfterMs: 360_000 })
    expect((await exact.take('k', [p], 2)).results[0]!.retryAfterMs).toBe(Number.POSITIVE_INFINITY)
  })

  it('paces: the next permit passes one interval later', async () => {
    const fast = policy.leakyBucket('lb', { limit: 10, window: 1_000 })
    expect((await store.take('k', [fast], 1)).allowed).toBe(true)
    const rejected = await store.take('k', [fast], 1)
    expect(rejected.allowed).toBe(false)
    await sleep(rejected.results[0]!.retryAfterMs + 5)
    expect((await store.take('k', [fast], 1)).allowed).toBe(true)
  })
})

describeRedis('fixed window', () => {
  const daily = policy.fixedWindow('fw', { limit: 5, window: DAY })

  it('counts exactly limit per window, then rejects until the window ends', async () => {
    expect(await admitted('k', [daily], 8)).toBe(5)
    const rejected = await store.take('k', [daily], 1)
    const [result] = rejected.results
    expect(result).toMatchObject({ allowed: false, remaining: 0 })
    expect(result!.retryAfterMs).toBe(result!.resetMs)
    expect((await store.take('k', [daily], 6)).results[0]!.retryAfterMs).toBe(
      Number.POSITIVE_INFINITY,
    )
  })

  it('aligns windows to the clock: an hourly window ends on the hour', async () => {
    const hourly = policy.fixedWindow('fw', { limit: 1, window: HOUR })
    await store.take('k', [hourly], 1)
    const { results } = await store.take('k', [hourly], 1)
    // Redis runs on this machine, so its clock and Date.now() agree to well within a second.
    const end = Date.now() + results[0]!.retryAfterMs
    const offset = end % HOUR
    expect(Math.min(offset, HOUR - offset)).toBeLessThan(1_000)
  })

  it('starts a new count when the window rolls over', async () => {
    const short = policy.fixedWindow('fw', { limit: 3, window: 200 })
    expect((await store.take('k', [short], 3)).allowed).toBe(true)
    const rejected = await store.take('k', [short], 1)
    expect(rejected.allowed).toBe(false)
    await sleep(rejected.results[0]!.retryAfterMs + 5)
    expect((await store.take('k', [short], 3)).allowed).toBe(true)
  })

  it('refund lowers the count of the current window', async () => {
    expect(await admitted('k', [daily], 5)).toBe(5)
    await store.refund('k', [daily], 2)
    expect((await store.get('k', [daily]))[0]!.remaining).toBe(2)
    await store.refund('k', [daily], 9)
    expect((await store.get('k', [daily]))[0]!.remaining).toBe(5)
    expect(await redis.exists(stateKey(prefix, 'k', daily))).toBe(0)
  })

  it('expires the key when its window ends; the receipt is the window number', async () => {
    const hourly = policy.fixedWindow('fw', { limit: 5, window: HOUR })
    const first = await store.take('k', [hourly], 1)
    const expiresAt = Number(await redis.call('PEXPIRETIME', stateKey(prefix, 'k', hourly)))
    expect(expiresAt % HOUR).toBe(0)
    expect(first.results[0]!.receipt).toBe(expiresAt / HOUR - 1)
    const second = await store.take('k', [hourly], 1)
    expect(second.results[0]!.receipt).toBe(first.results[0]!.receipt)
    expect(second.results[0]!.remaining).toBe(3)
  })

  it('counts nothing of a key that outlived its window (its expiry removed): the value names its window', async () => {
    const short = policy.fixedWindow('fw', { limit: 2, window: 200 })
    expect(await admitted('k', [short], 2)).toBe(2)
    await redis.persist(stateKey(prefix, 'k', short))
    await sleep(250)
    expect(await admitted('k', [short], 3)).toBe(2)
    expect(await redis.pttl(stateKey(prefix, 'k', short))).toBeGreaterThan(0)
  })
})

describeRedis('sliding window', () => {
  const hourly = policy.slidingWindow('sw', { limit: 10, window: HOUR })

  it('admits exactly limit in a rolling window', async () => {
    expect(await admitted('k', [hourly], 12)).toBe(10)
    const { results } = await store.take('k', [hourly], 1)
    // The slot holding the permits (6 min each) has wholly left the window one hour after
    // it ends: between 60 and 66 minutes from now.
    expect(results[0]!.retryAfterMs).toBeGreaterThan(HOUR - 5_000)
    expect(results[0]!.retryAfterMs).toBeLessThanOrEqual(HOUR + 6 * 60_000)
    expect(results[0]!.resetMs).toBe(results[0]!.retryAfterMs)
  })

  it('keeps its expiry, head, sum and one count per slot in one value, expiring when the head slot leaves', async () => {
    const short = policy.slidingWindow('sw', { limit: 10, window: 1_000, slots: 2 })
    const key = stateKey(prefix, 'k', short)
    const state = async () => {
      const value = await redis.getBuffer(key)
      return Array.from({ length: value!.length / 8 }, (_, i) => value!.readDoubleLE(8 * i))
    }
    const before = Date.now()
    const taken = await store.take('k', [short], 2)
    const tookAt = Date.now()
    const head = taken.results[0]!.receipt!
    const counts = [0, 0, 0]
    counts[head % 3] = 2
    const [expiry, ...rest] = await state()
    // The spec the state was written under sits beside it: limit, window µs, slots, and
    // the penalty's ms and refusals (none).
    expect(rest).toEqual([10, 1_000_000, 2, 0, 0, head, 2, ...counts])
    expect(expiry).toBe(Number(await redis.call('PEXPIRETIME', key)))
    await store.take('k', [short], 1)
    expect((await state()).slice(6, 8)).toEqual([head, 3])
    // The head generation leaves the window (slots + 1) slots after it began: 1,000 to
    // 1,500 ms after the first take. Read as an instant (PEXPIRETIME), not as a PTTL,
    // which also counts the calls made since (a take at a slot's end read as 998 ms).
    const expiresAt = Number(await redis.call('PEXPIRETIME', key))
    expect(expiresAt).toBeGreaterThanOrEqual(before + 1_000)
    expect(expiresAt).toBeLessThanOrEqual(tookAt + 1_500)
  })

  it('drops the permits of slots that left the window', async () => {
    const short = policy.slidingWindow('sw', { limit: 10, window: 100, slots: 2 })
    await store.take('k', [short], 2)
    await sleep(60)
    await store.take('k', [short], 1)
    // Both slots have wholly left the 100 ms window.
    await sleep(180)
    expect((await store.take('k', [short], 3)).results[0]!.remaining).toBe(7)
  })

  it('frees permits as their slot leaves the window', async () => {
    const short = policy.slidingWindow('sw', { limit: 4, window: 200, slots: 4 })
    expect((await store.take('k', [short], 4)).allowed).toBe(true)
    const rejected = await store.take('k', [short], 1)
    expect(rejected.allowed).toBe(false)
    const wait = rejected.results[0]!.retryAfterMs
    // A window plus at most one slot.
    expect(wait).toBeGreaterThan(150)
    expect(wait).toBeLessThanOrEqual(250)
    await sleep(wait + 5)
    expect((await store.take('k', [short], 4)).allowed).toBe(true)
  })

  it('refund gives back the newest permits', async () => {
    expect(await admitted('k', [hourly], 10)).toBe(10)
    await store.refund('k', [hourly], 3)
    expect((await store.get('k', [hourly]))[0]!.remaining).toBe(3)
    expect(await admitted('k', [hourly], 5)).toBe(3)
  })
})

describeRedis('warm-up token bucket', () => {
  it('starts at a third of capacity: 30 per hour admits a burst of 10 when cold', async () => {
    const p = policy.warmUp('wu', { limit: 30, window: HOUR, warmUp: HOUR })
    expect((await store.get('k', [p]))[0]!.remaining).toBe(10)
    expect(await admitted('k', [p], 12)).toBe(10)
  })

  it('still admits one at a time when cold with capacity 1', async () => {
    const p = policy.warmUp('wu', { limit: 30, window: HOUR, capacity: 1, warmUp: HOUR })
    expect(await admitted('k', [p], 3)).toBe(1)
  })

  it("grows the burst to capacity with the key's age", async () => {
    const p = policy.warmUp('wu', { limit: 6, window: HOUR, warmUp: 150 })
    // Cold: one permit costs 3T, so 6T of budget leaves room for one more.
    const first = await store.take('k', [p], 1)
    expect(first.results[0]!.remaining).toBe(1)
    await sleep(200)
    // Warm: the same debt (3T) now leaves three intervals of T.
    expect((await store.get('k', [p]))[0]!.remaining).toBe(3)
    expect(await admitted('k', [p], 5)).toBe(3)
  })

  it('keeps the creation time in the key, so the age survives between requests', async () => {
    const p = policy.warmUp('wu', { limit: 30, window: HOUR, warmUp: HOUR })
    await store.take('k', [p], 1)
    const value = async () => {
      const buffer = (await redis.getBuffer(stateKey(prefix, 'k', p)))!
      return Array.from({ length: buffer.length / 8 }, (_, i) => buffer.readDoubleLE(8 * i))
    }
    // The expiry, the spec the state was written under (limit, window µs, capacity,
    // warm-up µs, the penalty's ms and refusals), tat in µs and ticks, and its creation.
    const [, ...written] = await value()
    expect(written.slice(0, 6)).toEqual([30, 3_600_000_000, 30, 3_600_000_000, 0, 0])
    const first = written[8]!
    // Created when first seen: one cold interval (3·T = 6 min) before tat.
    expect(written[6]! - first).toBe(360_000_000)
    await store.take('k', [p], 1)
    expect((await value())[9]).toBe(first)
  })
})

describeRedis('numbers past 2^53', () => {
  it('a wait of centuries comes back whole (ioredis reads an integer reply past 2^53 off by a few)', async () => {
    // Found by the model test: a cold warm-up bucket forced 581,623,819 permits deep.
    const at = new ManualClock(1_098_536.193_000_002_8)
    const p = policy.warmUp('wu', { limit: 3, window: 60_000, capacity: 1, warmUp: 5_000 })
    const store = redisStore({ client: redis, prefix, clock: at, onError: 'deny', timeout: '10s' })
    const memory = memoryStore({ clock: at })
    expect(await store.get('k', [p])).toEqual(memory.get('k', [p]))
    expect(await store.force('k', [p], 581_623_819)).toEqual(memory.force('k', [p], 581_623_819))
    at.advance(0.001)
    const [got] = await store.get('k', [p])
    expect(got!.resetMs).toBe(34_897_429_139_999.996)
    expect([got]).toEqual(memory.get('k', [p]))
  })
})

describeRedis('concurrency', () => {
  const slots = policy.concurrency('conc', 2)

  it('holds slots until released; a second release of the same lease is a no-op', async () => {
    const a = await store.take('k', [slots], 1)
    const b = await store.take('k', [slots], 1)
    expect([a.allowed, b.allowed]).toEqual([true, true])
    expect(b.results[0]!.remaining).toBe(0)
    const full = await store.take('k', [slots], 1)
    expect(full.results[0]).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 0 })
    const lease = a.results[0]!.lease!
    expect(lease.permits).toBe(1)
    await store.release('k', slots, lease)
    await store.release('k', slots, lease)
    expect((await store.get('k', [slots]))[0]!.remaining).toBe(1)
    expect((await store.take('k', [slots], 1)).allowed).toBe(true)
    expect((await store.take('k', [slots], 1)).allowed).toBe(false)
  })

  it('counts permits, and refuses more than max (a bulkhead has no time axis: no wait)', async () => {
    const taken = await store.take('k', [slots], 2)
    expect(taken.results[0]!.lease!.permits).toBe(2)
    expect((await store.take('k', [slots], 1)).allowed).toBe(false)
    expect((await store.take('k', [slots], 3)).results[0]).toMatchObject({
      allowed: false,
      retryAfterMs: 0,
    })
    await store.release('k', slots, taken.results[0]!.lease!)
    expect(await redis.zcard(stateKey(prefix, 'k', slots))).toBe(0)
  })

  it('frees the slot of a holder that never releases once its lease expires', async () => {
    const short = redisStore({ client: redis, prefix, timeout: 100, leaseTtl: 150 })
    expect((await short.take('k', [slots], 2)).allowed).toBe(true)
    expect((await short.take('k', [slots], 1)).allowed).toBe(false)
    await sleep(200)
    const after = await short.take('k', [slots], 1)
    expect(after.allowed).toBe(true)
    // The expired lease was pruned: one member left.
    expect(await redis.zcard(stateKey(prefix, 'k', slots))).toBe(1)
  })

  it('refund does not touch concurrency slots', async () => {
    await store.take('k', [slots], 2)
    await store.refund('k', [slots], 2)
    expect((await store.get('k', [slots]))[0]!.remaining).toBe(0)
  })
})

describeRedis('several policies in one decision', () => {
  const burst = policy.tokenBucket('burst', { limit: 10, window: HOUR })
  const daily = policy.fixedWindow('daily', { limit: 2, window: DAY })
  const slots = policy.concurrency('slots', 5)

  it('takes from all or from none', async () => {
    expect(await admitted('k', [burst, daily], 4)).toBe(2)
    const [b, d] = await store.get('k', [burst, daily])
    expect(b!.remaining).toBe(8)
    expect(d!.remaining).toBe(0)
    const rejected = await store.take('k', [burst, daily], 1)
    expect(rejected.results.map((r) => r.allowed)).toEqual([true, false])
    expect(rejected.results[0]!.retryAfterMs).toBe(0)
  })

  it('holds no lease when another policy rejects', async () => {
    const tight = policy.fixedWindow('tight', { limit: 1, window: DAY })
    const first = await store.take('k', [slots, tight], 1)
    expect(first.allowed).toBe(true)
    expect(first.results[0]!.lease).toBeDefined()
    const second = await store.take('k', [slots, tight], 1)
    expect(second.allowed).toBe(false)
    expect(second.results[0]!.lease).toBeUndefined()
    expect(await redis.zcard(stateKey(prefix, 'k', slots))).toBe(1)
  })

  it('refuses one policy twice in a call, but keeps two specs under one name apart', async () => {
    const twin = policy.tokenBucket('burst', { limit: 10, window: HOUR })
    await expect(store.take('k', [burst, twin], 1)).rejects.toThrow(
      'redisStore: "policies" must differ within one call (one policy twice would be counted twice), got "burst"',
    )
    const other = policy.fixedWindow('burst', { limit: 1, window: DAY })
    const taken = await store.take('k', [burst, other], 1)
    expect(taken.results.map((r) => r.remaining)).toEqual([9, 0])
  })

  it('strikes only the policy that refused, and blocks the decision while it is blocked', async () => {
    const guarded = policy.fixedWindow('guarded', {
      limit: 1,
      window: DAY,
      block: { for: HOUR, after: 2 },
    })
    expect((await store.take('k', [burst, guarded], 1)).allowed).toBe(true)
    const first = await store.take('k', [burst, guarded], 1)
    expect(first.results.map((r) => [r.allowed, r.blocked ?? false])).toEqual([
      [true, false],
      [false, false],
    ])
    const second = await store.take('k', [burst, guarded], 1)
    expect(second.results.map((r) => [r.allowed, r.blocked ?? false])).toEqual([
      [true, false],
      [false, true],
    ])
    // The block's time left, and the burst policy's permits untouched by the refusals.
    expect(second.results[1]!.retryAfterMs).toBeGreaterThan(HOUR - 5_000)
    expect(second.results[0]!.remaining).toBe(9)
    const [b, g] = await store.get('k', [burst, guarded])
    expect([b!.remaining, g!.remaining, g!.blocked]).toEqual([9, 0, true])
  })
})

describeRedis('state in Redis', () => {
  const p = policy.tokenBucket('tb', { limit: 3, window: HOUR })

  it('get takes nothing and creates nothing', async () => {
    const fresh = await store.get('k', [p])
    expect(fresh[0]).toMatchObject({ allowed: true, remaining: 3, resetMs: 0, retryAfterMs: 0 })
    await store.get('k', [p])
    expect(await redis.exists(stateKey(prefix, 'k', p))).toBe(0)
  })

  it('expires a bucket once it is full again, plus a grace of eight intervals (1 s to 1 min)', async () => {
    await store.take('k', [p], 1)
    const ttl = await redis.pttl(stateKey(prefix, 'k', p))
    // One interval of 20 min, plus a grace of a minute (rounded up to the millisecond),
    // minus the test's milliseconds.
    expect(ttl).toBeLessThanOrEqual(21 * 60_000 + 1)
    expect(ttl).toBeGreaterThan(21 * 60_000 - 5_000)
    // 10 per 100 ms: full again 10 ms after one take, then a grace of a second.
    const quick = policy.tokenBucket('quick', { limit: 10, window: 100 })
    await store.take('k', [quick], 1)
    const quickTtl = await redis.pttl(stateKey(prefix, 'k', quick))
    expect(quickTtl).toBeLessThanOrEqual(1_011)
    expect(quickTtl).toBeGreaterThan(1_010 - 500)
  })

  it("moves a busy bucket's expiry only when its debt outgrows it", async () => {
    // 10 per hour: each take adds six minutes of debt, more than the grace of a minute.
    const busy = policy.tokenBucket('busy', { limit: 10, window: HOUR })
    const key = stateKey(prefix, 'k', busy)
    await store.take('k', [busy], 1)
    const expiry = Number(await redis.call('PEXPIRETIME', key))
    await store.take('k', [busy], 1)
    expect(Number(await redis.call('PEXPIRETIME', key))).toBeGreaterThan(expiry)
    // 10,000 per hour: a take adds 360 ms, well within the grace of 2.88 s.
    const steady = policy.tokenBucket('steady', { limit: 10_000, window: HOUR })
    const steadyKey = stateKey(prefix, 'k', steady)
    await store.take('k', [steady], 1)
    const before = await redis.call('PEXPIRETIME', steadyKey)
    await store.take('k', [steady], 1)
    expect(await redis.call('PEXPIRETIME', steadyKey)).toBe(before)
  })

  it('reset forgets the given policies, or every policy the store has seen', async () => {
    const other = policy.fixedWindow('fw', { limit: 1, window: DAY })
    await store.take('k', [p, other], 1)
    const keys = [stateKey(prefix, 'k', p), stateKey(prefix, 'k', other)]
    await store.reset('k', [p])
    expect(await redis.exists(...keys)).toBe(1)
    await store.take('k', [p], 1)
    await store.reset('k')
    expect(await redis.exists(...keys)).toBe(0)
    expect((await store.take('k', [p, other], 1)).allowed).toBe(true)
  })

  it('answers an empty policy list without a round trip', async () => {
    expect(await store.take('k', [], 1)).toEqual({ allowed: true, results: [] })
    expect(await store.get('k', [])).toEqual([])
  })

  it('refuses a cost that is not a positive safe integer, as every store does', async () => {
    for (const cost of [0, -1, 1.5, Number.NaN, 1e308]) {
      await expect(store.take('k', [p], cost)).rejects.toThrow(
        `redisStore.take: "cost" must be a positive safe integer, got ${cost}`,
      )
      await expect(store.refund('k', [p], cost)).rejects.toThrow(RangeError)
    }
    await expect(store.take('k', [p], '2' as never)).rejects.toThrow(TypeError)
    await expect(store.take('k', [p], [1, 2])).rejects.toThrow(
      'redisStore.take: "cost" must have one entry per policy (1), got 2',
    )
  })

  it('answers a cost beyond every limit with "never", on every path (issue 11)', async () => {
    const policies = [
      policy.fixedWindow('fw', { limit: 5, window: DAY }),
      policy.slidingWindow('sw', { limit: 5, window: HOUR }),
      policy.tokenBucket('tb', { limit: 5, window: HOUR }),
      policy.warmUp('wu', { limit: 5, window: HOUR, warmUp: HOUR }),
      policy.concurrency('conc', 5),
    ]
    for (const cost of [Number.MAX_SAFE_INTEGER, 6]) {
      for (const one of policies) {
        const { allowed, results } = await store.take('k', [one], cost)
        // A bulkhead has no time axis: its 0 means "unknown", as in the memory store.
        const never = one.spec.algorithm === 'concurrency' ? 0 : Number.POSITIVE_INFINITY
        expect([one.name, allowed, results[0]!.retryAfterMs]).toEqual([one.name, false, never])
      }
      const all = await store.take('k', policies, cost)
      expect(all.allowed).toBe(false)
    }
    // Nothing was taken.
    expect((await store.get('k', policies)).map((r) => r.remaining)).toEqual([5, 5, 5, 1, 5])
  })

  it('never reports a negative remaining: a changed limit carries the window over (issues 15, 28)', async () => {
    const before = policy.fixedWindow('api', { limit: 5, window: DAY })
    expect(await admitted('k', [before], 5)).toBe(5)
    // Redeployed with a lower limit under the same name: all of 5 used is all of 3 used
    // (proportional), not a fresh budget, and not a negative remaining.
    const after = policy.fixedWindow('api', { limit: 3, window: DAY })
    const { results } = await store.take('k', [after], 1)
    expect([results[0]!.allowed, results[0]!.remaining]).toEqual([false, 0])
    // And back: 3 of 3 is 5 of 5.
    const refused = await store.take('k', [before], 2)
    expect([refused.allowed, refused.results[0]!.remaining]).toEqual([false, 0])
  })
})

describeRedis('resetAll', () => {
  it('deletes every key under its prefix, in SCAN batches with UNLINK, never KEYS', async () => {
    const server = await startRedisServer()
    try {
      const admin = connect({ port: server.port })
      // 2,500 takes at once on a busy machine: a timeout that never sends one to the fallback.
      const mine = redisStore({
        client: connect({ port: server.port }),
        prefix: 'app:',
        timeout: '10s',
        leaseTtl: '1m',
      })
      // A prefix that extends this one belongs to another store.
      const theirs = redisStore({ client: connect({ port: server.port }), prefix: 'app:x:' })
      const slots = policy.concurrency('slots', 2)
      const blocked = policy.fixedWindow('b', { limit: 1, window: DAY, block: { for: HOUR } })
      const p = policy.slidingWindow('sw', { limit: 5, window: HOUR })
      await Promise.all(Array.from({ length: 2_500 }, (_, i) => mine.take(`client-${i}`, [p], 1)))
      await mine.take('k', [slots], 1)
      await mine.take('k', [blocked], 1)
      await mine.take('k', [blocked], 1)
      await theirs.take('k', [p], 1)
      await admin.set('app:other', '1')
      await admin.config('RESETSTAT')
      // The block's strikes live in its policy's key.
      expect(await admin.dbsize()).toBe(2_500 + 2 + 1 + 1)
      await mine.resetAll()
      const stats = await admin.info('commandstats')
      expect((await admin.keys('*')).sort()).toEqual(['app:other', stateKey('app:x:', 'k', p)])
      expect(stats).not.toContain('cmdstat_keys')
      expect(Number(/cmdstat_scan:calls=(\d+)/.exec(stats)?.[1])).toBeGreaterThanOrEqual(3)
      expect(stats).toContain('cmdstat_unlink')
      expect((await mine.take('k', [blocked], 1)).allowed).toBe(true)
    } finally {
      await server.stop()
    }
  })
})

describeRedis('one-policy scripts and the general script', () => {
  const wide = policy.fixedWindow('wide', { limit: 1_000_000, window: DAY })
  const cases: [string, Policy][] = [
    ['fixed window', policy.fixedWindow('p', { limit: 7, window: DAY })],
    ['sliding window', policy.slidingWindow('p', { limit: 7, window: HOUR, slots: 6 })],
    ['token bucket', policy.tokenBucket('p', { limit: 7, window: HOUR, capacity: 5 })],
    ['leaky bucket', policy.leakyBucket('p', { limit: 7, window: HOUR })],
  ]

  it.each(cases)('%s: keep one state, read and written alike by either', async (_, p) => {
    const costs = [1, 2, 1, 3, 1, 1, 2]
    const alone: unknown[] = []
    const mixed: unknown[] = []
    for (const [i, cost] of costs.entries()) {
      alone.push((await exact.take('alone', [p], cost)).results[0])
      // The same sequence on another key, every other take through the general script.
      mixed.push((await exact.take('mixed', i % 2 === 0 ? [p] : [p, wide], cost)).results[0])
      clock.advance(HOUR / 13)
    }
    expect(mixed).toEqual(alone)
    expect(await exact.get('mixed', [p])).toEqual(await exact.get('alone', [p]))
  })
})
