import { keyedLimiter } from '@sluice/keyed'
import { expect, it } from 'vitest'
import { redisStore } from '../src/index'
import { connect, describeRedis, uniquePrefix } from './helpers'

// Concurrent takes on one key are sent as one script call per tick (issue 27): each must
// still be decided after the ones before it, so a burst admits exactly the limit.
describeRedis('a burst on one key through keyedLimiter', () => {
  it.each(['fixed-window', 'sliding-window', 'token-bucket'] as const)(
    '%s: 1,000 concurrent consumes at limit 5 admit exactly 5',
    async (algorithm) => {
      const store = redisStore({ client: connect(), prefix: uniquePrefix(), timeout: '10s' })
      const limiter = keyedLimiter({ algorithm, limit: 5, window: '1h', store })
      const results = await Promise.all(Array.from({ length: 1_000 }, () => limiter.consume('hot')))
      expect(results.filter((r) => r.allowed).length).toBe(5)
      expect((await limiter.get('hot')).remaining).toBe(0)
    },
  )

  it('sends a burst on one key in a few script calls, not one per take', async () => {
    const io = connect()
    const scripts: number[] = []
    const store = redisStore({
      // The real client, counting what is sent: each EVALSHA with the takes it carries.
      client: (args) => {
        if (args[0] === 'EVALSHA') scripts.push(args.length)
        return io.call(args[0]!, ...args.slice(1))
      },
      prefix: uniquePrefix(),
      timeout: '10s',
    })
    const limiter = keyedLimiter({ limit: 500, window: '1h', store })
    // Once first, so that Redis has the scripts (a NOSCRIPT would send a call again).
    await Promise.all([limiter.consume('warm'), limiter.consume('warm')])
    scripts.length = 0
    const results = await Promise.all(Array.from({ length: 1_000 }, () => limiter.consume('hot')))
    expect(results.filter((r) => r.allowed).length).toBe(500)
    // 1,000 takes made in one tick: batches of at most 128, one call each.
    expect(scripts.length).toBe(Math.ceil(1_000 / 128))
  })

  it('leaky-bucket: a burst admits what the memory store admits', async () => {
    const store = redisStore({ client: connect(), prefix: uniquePrefix(), timeout: '10s' })
    const burst = async (limiter: ReturnType<typeof keyedLimiter>) => {
      const results = await Promise.all(Array.from({ length: 1_000 }, () => limiter.consume('hot')))
      return results.filter((r) => r.allowed).length
    }
    const options = { algorithm: 'leaky-bucket', limit: 5, window: '1h' } as const
    expect(await burst(keyedLimiter({ ...options, store }))).toBe(
      await burst(keyedLimiter(options)),
    )
  })

  it('a burst over many keys admits the limit on each', async () => {
    const store = redisStore({ client: connect(), prefix: uniquePrefix(), timeout: '10s' })
    const limiter = keyedLimiter({ limit: 5, window: '1h', store })
    const keys = Array.from({ length: 1_000 }, (_, i) => `k${i % 50}`)
    const results = await Promise.all(keys.map((key) => limiter.consume(key)))
    const admitted = new Map<string, number>()
    results.forEach((r, i) => {
      if (r.allowed) admitted.set(keys[i]!, (admitted.get(keys[i]!) ?? 0) + 1)
    })
    expect([admitted.size, new Set(admitted.values())]).toEqual([50, new Set([5])])
  })
})
