import type { Policy } from '@sluice/http'
import { beforeEach, expect, it } from 'vitest'
import { type RedisStore, redisStore } from '../src/index'
import { connect, DAY, describeRedis, HOUR, policy, sleep, uniquePrefix } from './helpers'

// Redis time cannot be moved, so the exact numbers use windows where the few milliseconds
// a test takes cannot matter (N per hour or per day), and a refill is observed with a
// bounded real wait of the retryAfterMs the store itself announced.

const redis = connect()
let prefix: string
let store: RedisStore

beforeEach(() => {
  prefix = uniquePrefix()
  store = redisStore({ client: redis, prefix })
})

async function admitted(key: string, policies: Policy[], attempts: number): Promise<number> {
  let count = 0
  for (let i = 0; i < attempts; i++) if ((await store.take(key, policies, 1)).allowed) count++
  return count
}

describeRedis('token bucket', () => {
  const hourly = policy.tokenBucket('tb', { limit: 3, window: HOUR })

  it('admits exactly capacity from full, then rejects with the time to the next permit', async () => {
    const remaining = []
    for (let i = 0; i < 3; i++) {
      const { allowed, results } = await store.take('k', [hourly], 1)
      expect(allowed).toBe(true)
      remaining.push(results[0]!.remaining)
    }
    expect(remaining).toEqual([2, 1, 0])
    const rejected = await store.take('k', [hourly], 1)
    expect(rejected.allowed).toBe(false)
    const [result] = rejected.results
    expect(result).toMatchObject({ allowed: false, limit: 3, remaining: 0 })
    // T = 20 min, minus the milliseconds this test has run.
    expect(result!.retryAfterMs).toBeLessThanOrEqual(20 * 60_000)
    expect(result!.retryAfterMs).toBeGreaterThan(20 * 60_000 - 5_000)
    // Fresh again once all three intervals have drained.
    expect(result!.resetMs).toBeLessThanOrEqual(HOUR)
    expect(result!.resetMs).toBeGreaterThan(HOUR - 5_000)
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
  ])(
    'admits a full bucket of %i per %i ms in one take of exactly capacity',
    async (limit, window) => {
      const p = policy.tokenBucket('tb', { limit, window })
      const full = await store.take('k', [p], limit)
      expect(full.allowed).toBe(true)
      expect(full.results[0]!.remaining).toBe(0)
    },
  )

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
    expect((await store.get('k', [p]))[0]!.remaining).toBe(1)
    expect(await admitted('k', [p], 3)).toBe(1)
    const rejected = await store.take('k', [p], 1)
    // T = 6 min.
    expect(rejected.results[0]!.retryAfterMs).toBeLessThanOrEqual(6 * 60_000)
    expect(rejected.results[0]!.retryAfterMs).toBeGreaterThan(6 * 60_000 - 5_000)
    expect((await store.take('k', [p], 2)).results[0]!.retryAfterMs).toBe(Number.POSITIVE_INFINITY)
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
    expect(await redis.exists(`${prefix}{k}:fw`)).toBe(0)
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

  it('keeps one hash field per live slot generation, and drops the ones that left', async () => {
    const short = policy.slidingWindow('sw', { limit: 10, window: 100, slots: 2 })
    const counts = async () => Object.values(await redis.hgetall(`${prefix}{k}:sw`)).map(Number)
    await store.take('k', [short], 2)
    expect(await counts()).toEqual([2])
    await sleep(60)
    await store.take('k', [short], 1)
    expect((await counts()).sort()).toEqual([1, 2])
    // Both slots have wholly left the 100 ms window.
    await sleep(180)
    await store.take('k', [short], 3)
    expect(await counts()).toEqual([3])
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
    const created = Number(await redis.hget(`${prefix}{k}:wu`, 'c'))
    await store.take('k', [p], 1)
    expect(Number(await redis.hget(`${prefix}{k}:wu`, 'c'))).toBe(created)
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

  it('counts permits, and refuses forever more than max', async () => {
    const taken = await store.take('k', [slots], 2)
    expect(taken.results[0]!.lease!.permits).toBe(2)
    expect((await store.take('k', [slots], 1)).allowed).toBe(false)
    expect((await store.take('k', [slots], 3)).results[0]!.retryAfterMs).toBe(
      Number.POSITIVE_INFINITY,
    )
    await store.release('k', slots, taken.results[0]!.lease!)
    expect(await redis.exists(`${prefix}{k}:conc`)).toBe(0)
  })

  it('frees the slot of a holder that never releases once its lease expires', async () => {
    const short = redisStore({ client: redis, prefix, leaseTtl: 150 })
    expect((await short.take('k', [slots], 2)).allowed).toBe(true)
    expect((await short.take('k', [slots], 1)).allowed).toBe(false)
    await sleep(200)
    const after = await short.take('k', [slots], 1)
    expect(after.allowed).toBe(true)
    // The expired lease was pruned: one member left.
    expect(await redis.zcard(`${prefix}{k}:conc`)).toBe(1)
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
    expect(await redis.zcard(`${prefix}{k}:slots`)).toBe(1)
  })

  it('refuses two policies with the same name', async () => {
    const twin = policy.fixedWindow('burst', { limit: 1, window: DAY })
    await expect(store.take('k', [burst, twin], 1)).rejects.toThrow(
      'redisStore: policy names must be unique within one call, got "burst" twice',
    )
  })
})

describeRedis('state in Redis', () => {
  const p = policy.tokenBucket('tb', { limit: 3, window: HOUR })

  it('get takes nothing and creates nothing', async () => {
    const fresh = await store.get('k', [p])
    expect(fresh[0]).toMatchObject({ allowed: true, remaining: 3, resetMs: 0, retryAfterMs: 0 })
    await store.get('k', [p])
    expect(await redis.exists(`${prefix}{k}:tb`)).toBe(0)
  })

  it('expires a key exactly when its state is back to fresh', async () => {
    await store.take('k', [p], 1)
    const ttl = await redis.pttl(`${prefix}{k}:tb`)
    // One interval of 20 min, minus the test's milliseconds.
    expect(ttl).toBeLessThanOrEqual(20 * 60_000)
    expect(ttl).toBeGreaterThan(20 * 60_000 - 5_000)
    const quick = policy.tokenBucket('quick', { limit: 10, window: 100 })
    await store.take('k', [quick], 1)
    expect(await redis.exists(`${prefix}{k}:quick`)).toBe(1)
    await sleep(30)
    expect(await redis.exists(`${prefix}{k}:quick`)).toBe(0)
  })

  it('reset forgets the given policies, or every policy the store has seen', async () => {
    const other = policy.fixedWindow('fw', { limit: 1, window: DAY })
    await store.take('k', [p, other], 1)
    await store.reset('k', [p])
    expect(await redis.exists(`${prefix}{k}:tb`, `${prefix}{k}:fw`)).toBe(1)
    await store.take('k', [p], 1)
    await store.reset('k')
    expect(await redis.exists(`${prefix}{k}:tb`, `${prefix}{k}:fw`)).toBe(0)
    expect((await store.take('k', [p, other], 1)).allowed).toBe(true)
  })

  it('answers an empty policy list without a round trip', async () => {
    expect(await store.take('k', [], 1)).toEqual({ allowed: true, results: [] })
    expect(await store.get('k', [])).toEqual([])
  })

  it('refuses a cost that is not a positive integer', async () => {
    for (const cost of [0, -1, 1.5, Number.NaN]) {
      await expect(store.take('k', [p], cost)).rejects.toThrow(
        `redisStore: "cost" must be a positive integer, got ${cost}`,
      )
    }
  })
})
