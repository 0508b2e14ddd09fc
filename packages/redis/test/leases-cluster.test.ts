import { ManualClock } from '@sluice/core'
import type { LeasedStore, Policy } from '@sluice/keyed'
import type { Cluster } from 'ioredis'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { redisStore, stateKey } from '../src/index'
import { describeRedis, HOUR, policy, uniquePrefix } from './helpers'
import { startCluster, type TestCluster } from './redis-cluster'

// Quota leases on a real Redis Cluster (3 masters, 3 replicas): client keys on every
// master, two leased stores standing for two processes.

let cluster: TestCluster
let client: Cluster

/** Script calls the masters have answered so far (decisions, blocks, refunds). */
async function scriptCalls(): Promise<number> {
  let total = 0
  for (const node of await cluster.masters()) {
    const info = String(await cluster.connect(node).info('commandstats'))
    for (const [, , calls] of info.matchAll(
      /cmdstat_(eval|evalsha|eval_ro|evalsha_ro):calls=(\d+)/g,
    )) {
      total += Number(calls)
    }
  }
  return total
}

/** One client key per master, for `prefix` and `on`'s keys. */
async function keysOnEveryMaster(prefix: string, on: Policy): Promise<string[]> {
  const keys: string[] = []
  for (const master of await cluster.masters()) {
    for (let i = 0; ; i++) {
      const key = `client-${master.port}-${i}`
      if ((await cluster.masterOf(stateKey(prefix, key, on))).port === master.port) {
        keys.push(key)
        break
      }
    }
  }
  return keys
}

function leased(prefix: string): LeasedStore {
  // The lease's own clock: ttl ends only when the test says.
  const lease = { share: 0.01, ttl: '1h', clock: new ManualClock() } as const
  return redisStore({ client, prefix, lease }) as unknown as LeasedStore
}

describeRedis('quota leases on a Redis Cluster', () => {
  beforeAll(async () => {
    cluster = await startCluster()
    client = await cluster.client()
  }, 60_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  it('two processes share each key’s budget on every master, one call per block, every permit accounted for', async () => {
    const prefix = uniquePrefix()
    const hourly = policy.fixedWindow('hourly', { limit: 10_000, window: HOUR })
    const keys = await keysOnEveryMaster(prefix, hourly)
    expect(keys).toHaveLength(3)
    const [a, b] = [leased(prefix), leased(prefix)]
    // The script loaded on every master first (a master that lacks it costs a second call):
    // another policy of the same algorithm, on the same keys' masters.
    const warm = policy.fixedWindow('warm', { limit: 10, window: HOUR })
    for (const key of keys) await redisStore({ client, prefix }).take(key, [warm], 1)
    const before = await scriptCalls()
    for (const key of keys) {
      for (let i = 0; i < 500; i++) {
        expect((await a.take(key, [hourly], 1)).allowed).toBe(true)
        expect((await b.take(key, [hourly], 1)).allowed).toBe(true)
      }
    }
    const calls = (await scriptCalls()) - before
    // Per key and process: the first decision exact, a block of 100, then one top-up per
    // 75 permits spent (three quarters of a block): 8 calls for 500 decisions.
    expect(calls).toBe(3 * 2 * 8)
    await Promise.all([a.flush(), b.flush()])
    const exact = redisStore({ client, prefix })
    for (const key of keys) {
      expect((await exact.get(key, [hourly]))[0]!.remaining).toBe(10_000 - 1_000)
    }
  }, 60_000)

  it('at twice the limit, admits at most the limit per key (nothing stranded once flushed)', async () => {
    const prefix = uniquePrefix()
    const limit = 1_000
    // B = 10 at share 0.01; an hour-long window: no slot leaves it during the test.
    const sliding = policy.slidingWindow('sliding', { limit, window: HOUR })
    const keys = await keysOnEveryMaster(prefix, sliding)
    const processes = [leased(prefix), leased(prefix)]
    const admitted = new Map(keys.map((key) => [key, 0]))
    await Promise.all(
      processes.map(async (store) => {
        for (let i = 0; i < limit; i++) {
          // A batch in flight at once per process, on every key.
          const taken = await Promise.all(keys.map((key) => store.take(key, [sliding], 1)))
          taken.forEach((result, k) => {
            if (result.allowed) admitted.set(keys[k]!, admitted.get(keys[k]!)! + 1)
          })
        }
      }),
    )
    await Promise.all(processes.map((store) => store.flush()))
    const exact = redisStore({ client, prefix })
    for (const key of keys) {
      const count = admitted.get(key)!
      expect(count).toBeLessThanOrEqual(limit)
      // What a process held when the other was refused is at most B each.
      expect(count).toBeGreaterThanOrEqual(limit - 2 * 10)
      expect((await exact.get(key, [sliding]))[0]!.remaining).toBe(limit - count)
    }
  }, 60_000)
})
