import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type RedisStoreError, redisStore, stateKey } from '../src/index'
import { DAY, describeRedis, HOUR, policy, sleep } from './helpers'
import { type RedisServer, startRedisServer } from './redis-server'

// A one-node Redis Cluster owning all 16384 slots: it enforces the same rule as a real
// cluster, refusing a script whose keys hash to different slots (CROSSSLOT).
let server: RedisServer
let dir: string
let cluster: Cluster

const tricky = [
  'plain',
  'a}b',
  '{x}',
  '}',
  '{',
  'user:42',
  'sluice:',
  'sluice:{user}:hourly',
  '',
  '%7D',
]
const hourly = policy.tokenBucket('hourly', { limit: 3, window: HOUR })
const daily = policy.fixedWindow('daily', { limit: 2, window: DAY })
const slots = policy.concurrency('slots', 1)

describeRedis('Redis Cluster', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-cluster-'))
    server = await startRedisServer({
      args: [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, 'nodes.conf'),
        '--dir',
        dir,
        '--cluster-announce-ip',
        '127.0.0.1',
      ],
    })
    const admin = new Redis({ host: '127.0.0.1', port: server.port })
    await admin.call(
      'CLUSTER',
      'ADDSLOTS',
      ...Array.from({ length: 16384 }, (_, slot) => String(slot)),
    )
    for (
      let i = 0;
      i < 200 && !(await admin.call('CLUSTER', 'INFO'))?.toString().includes('cluster_state:ok');
      i++
    ) {
      await sleep(50)
    }
    await admin.quit()
    cluster = new Cluster([{ host: '127.0.0.1', port: server.port }])
  })

  afterAll(async () => {
    await cluster?.quit()
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('refuses keys in different slots, so the tests below can fail', async () => {
    await expect(
      cluster.call('EVAL', 'return 1', '2', 'sluice:{a}:hourly', 'sluice:{b}:hourly'),
    ).rejects.toThrow('CROSSSLOT')
  })

  it('puts every key of one decision in one slot, whatever the client key holds', async () => {
    for (const key of tricky) {
      const names = [hourly, daily, slots].map((p) => stateKey('sluice:', key, p))
      const hashed = await Promise.all(
        names.map((name) => cluster.call('CLUSTER', 'KEYSLOT', name)),
      )
      expect(new Set(hashed).size).toBe(1)
    }
  })

  it('runs multi-policy decisions on a cluster client, each client key on its own budget', async () => {
    const failures: RedisStoreError[] = []
    const store = redisStore({
      client: cluster,
      onError: 'deny',
      onFailure: (error) => failures.push(error),
    })
    for (const key of tricky) {
      const first = await store.take(key, [hourly, daily, slots], 1)
      expect(first.allowed).toBe(true)
      await store.release(key, slots, first.results[2]!.lease!)
      expect((await store.take(key, [hourly, daily], 1)).allowed).toBe(true)
      const third = await store.take(key, [hourly, daily], 1)
      expect(third.results.map((r) => r.allowed)).toEqual([true, false])
      expect((await store.get(key, [hourly]))[0]!.remaining).toBe(1)
    }
    // Each key spent its own budget: none of them collided with another.
    await store.refund('a}b', [hourly, daily], 1)
    expect((await store.get('a}b', [hourly, daily])).map((r) => r.remaining)).toEqual([2, 1])
    await store.reset('{x}')
    expect((await store.get('{x}', [hourly, daily])).map((r) => r.remaining)).toEqual([3, 2])
    expect((await store.get('}', [hourly, daily])).map((r) => r.remaining)).toEqual([1, 0])
    expect(failures).toEqual([])
  })
})
