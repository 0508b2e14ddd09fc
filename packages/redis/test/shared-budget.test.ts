import type { Policy } from '@sluice/http'
import { beforeEach, expect, it } from 'vitest'
import { type RedisStore, redisStore } from '../src/index'
import { connect, DAY, describeRedis, HOUR, policy, uniquePrefix } from './helpers'

// Two stores on two connections stand for two application processes.
let one: RedisStore
let two: RedisStore

beforeEach(() => {
  const prefix = uniquePrefix()
  one = redisStore({ client: connect(), prefix })
  two = redisStore({ client: connect(), prefix })
})

const rates: [string, Policy][] = [
  ['token bucket', policy.tokenBucket('p', { limit: 25, window: HOUR })],
  [
    'warm-up (cold burst of a third)',
    policy.warmUp('p', { limit: 75, window: HOUR, warmUp: HOUR }),
  ],
  ['fixed window', policy.fixedWindow('p', { limit: 25, window: DAY })],
  ['sliding window', policy.slidingWindow('p', { limit: 25, window: HOUR })],
]

describeRedis('two processes, one budget', () => {
  it.each(rates)('%s: alternating takes share the budget exactly', async (_, p) => {
    let admitted = 0
    for (let i = 0; i < 40; i++) {
      const store = i % 2 === 0 ? one : two
      if ((await store.take('client', [p], 1)).allowed) admitted++
    }
    expect(admitted).toBe(25)
    const [a] = await one.get('client', [p])
    const [b] = await two.get('client', [p])
    expect(a!.remaining).toBe(0)
    expect(b!.remaining).toBe(0)
  })

  it.each(rates)('%s: 400 concurrent takes never exceed the limit', async (_, p) => {
    const takes = Array.from({ length: 400 }, (_, i) => (i % 2 === 0 ? one : two).take('c', [p], 1))
    const results = await Promise.all(takes)
    expect(results.filter((r) => r.allowed)).toHaveLength(25)
  })

  it('concurrency: 100 concurrent takes hold exactly max slots, released from either side', async () => {
    const slots = policy.concurrency('slots', 7)
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? one : two).take('c', [slots], 1)),
    )
    const held = results.filter((r) => r.allowed)
    expect(held).toHaveLength(7)
    // A lease taken through one process can be released through the other.
    await two.release('c', slots, held[0]!.results[0]!.lease!)
    expect((await one.get('c', [slots]))[0]!.remaining).toBe(1)
  })

  it('multi-policy decisions stay atomic under contention', async () => {
    const burst = policy.tokenBucket('burst', { limit: 50, window: HOUR })
    const daily = policy.fixedWindow('daily', { limit: 20, window: DAY })
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? one : two).take('c', [burst, daily], 1)),
    )
    expect(results.filter((r) => r.allowed)).toHaveLength(20)
    const [b, d] = await one.get('c', [burst, daily])
    // Rejected decisions took nothing from the burst policy either.
    expect(b!.remaining).toBe(30)
    expect(d!.remaining).toBe(0)
  })
})
