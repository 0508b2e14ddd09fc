import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { expect, it } from 'vitest'
import { redisStore } from '../src/index'
import { connect, describeRedis, HOUR, policy, uniquePrefix } from './helpers'

// Issue 24 item 5: the store kept one entry per policy id it ever saw (`#seen`), so a limit
// derived from client input grew the heap without bound; and `reset(key)` covered only the
// policies this process had seen.

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

function heapAfterGc(): number {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

describeRedis('policies without bound (issue 24 item 5)', () => {
  it('reset(key) forgets the key under every policy, also those this process never counted by', async () => {
    const prefix = uniquePrefix()
    const counting = redisStore({ client: connect(), prefix })
    const policies = Array.from({ length: 300 }, (_, i) =>
      policy.fixedWindow(`plan-${i}`, { limit: 10 + i, window: HOUR }),
    )
    await Promise.all(policies.map((p) => counting.take('client', [p], 3)))
    await counting.take('other', [policies[0]!], 3)
    // Another process (a store that never saw these policies) resets the key.
    await redisStore({ client: connect(), prefix }).reset('client')
    const after = await counting.get('client', policies)
    expect(after.filter((r) => r.remaining !== r.limit)).toEqual([])
    expect((await counting.get('other', [policies[0]!]))[0]!.remaining).toBe(7)
  })

  it('reset(key) matches the key literally: glob characters in it reach no other key', async () => {
    const prefix = uniquePrefix()
    const store = redisStore({ client: connect(), prefix })
    const p = policy.fixedWindow('plan', { limit: 5, window: HOUR })
    await store.take('a*', [p], 1)
    await store.take('ab', [p], 1)
    await store.reset('a*')
    expect((await store.get('a*', [p]))[0]!.remaining).toBe(5)
    expect((await store.get('ab', [p]))[0]!.remaining).toBe(4)
  })

  it('keeps nothing per policy: 200,000 distinct policies leave the heap where it was', async () => {
    // A long timeout: on a loaded machine, 1,000 calls in flight may wait past the default.
    const store = redisStore({ client: connect(), prefix: uniquePrefix(), timeout: '10s' })
    const round = async (from: number) => {
      for (let i = from; i < from + 100_000; i += 1_000) {
        const calls: Promise<void>[] = []
        for (let j = i; j < i + 1_000; j++) {
          const p = policy.fixedWindow(`plan-${j}`, { limit: 1 + (j % 1_000), window: HOUR })
          calls.push(store.reset('client', [p]))
        }
        await Promise.all(calls)
      }
    }
    await round(0) // warms up what is made once (compiled code, the client's buffers)
    const before = heapAfterGc()
    await round(100_000)
    await round(200_000)
    // A table of 200,000 plans (each holding its policy) is tens of MB; 4 MB is noise.
    expect(heapAfterGc() - before).toBeLessThan(4 * 1024 * 1024)
  }, 120_000)
})
