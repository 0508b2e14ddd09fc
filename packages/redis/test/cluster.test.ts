import { ManualClock } from '@sluice/core'
import type { Policy, TakeResult } from '@sluice/http'
import { runStoreContract, runStoreModel } from '@sluice/http/testing'
import type { Cluster } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { hashSlot } from '../src/cluster'
import { type RedisStore, type RedisStoreError, redisStore, stateKey } from '../src/index'
import { GENERAL } from '../src/scripts'
import { DAY, describeRedis, HOUR, policy, sleep, uniquePrefix } from './helpers'
import { type ClusterNode, startCluster, type TestCluster } from './redis-cluster'
import { replyDroppingProxy } from './reply-dropping-proxy'

// A real Redis Cluster: 3 masters, 3 replicas, cluster-node-timeout 500 ms, started from
// redis-server for this file. The tests run in order: the contract and the key layout
// first, then the failovers, each leaving the cluster settled for the next (the kill
// last). Waits poll the cluster's state with generous bounds; nothing times anything.

let cluster: TestCluster
let client: Cluster

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

/** Polls `done` (up to 30 s): state a background probe, a failover or a flush changes. */
async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600 && !(await done()); i++) await sleep(50)
  expect(await done(), what).toBe(true)
}

/** A client key whose keys live on `node` (as the cluster stands now). */
async function keyOn(node: ClusterNode, prefix: string, label: string): Promise<string> {
  for (let i = 0; ; i++) {
    const key = `${label}-${i}`
    if ((await cluster.masterOf(stateKey(prefix, key, daily))).port === node.port) return key
  }
}

/** A store with the test's short timeout and probe, and its reports. */
function watchedStore(prefix: string) {
  const failures: RedisStoreError[] = []
  let recoveries = 0
  const store = redisStore({
    client,
    prefix,
    timeout: 300,
    probeInterval: 100,
    onError: 'deny',
    onFailure: (error) => failures.push(error),
    onRecovery: () => {
      recoveries++
    },
  })
  return { store, failures, recoveries: () => recoveries }
}

/**
 * Decisions on every given key, one after another, until `finish`: each must be answered
 * (within the store's timeout plus slack), and records which were admitted.
 */
function startLoad(store: RedisStore, keys: readonly string[], policies: readonly Policy[]) {
  const admitted = new Map(keys.map((key) => [key, [] as boolean[]]))
  let running = true
  const loop = (async () => {
    while (running) {
      for (const key of keys) {
        const started = performance.now()
        const taken: TakeResult = await store.take(key, policies, 1)
        expect(performance.now() - started).toBeLessThan(300 + 2_000)
        admitted.get(key)!.push(taken.allowed)
      }
      await sleep(5)
    }
  })()
  return {
    async finish() {
      running = false
      await loop
      return admitted
    },
  }
}

describeRedis('Redis Cluster, 3 masters and 3 replicas', () => {
  beforeAll(async () => {
    cluster = await startCluster()
    client = await cluster.client()
  }, 60_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  describe('the store contract', () => {
    const failures: RedisStoreError[] = []
    afterEach(() => {
      expect(failures).toEqual([])
    })
    // `carries`: as in contract.test.ts (every algorithm carries over to a changed spec).
    // On a test clock, for the rate tables (contract.test.ts runs it on Redis's own too).
    const clock = new ManualClock(1_800_000_000_000)
    runStoreContract(
      'redisStore on a Redis Cluster',
      () =>
        redisStore({
          client,
          prefix: uniquePrefix(),
          onError: 'deny',
          onFailure: (error) => failures.push(error),
          clock,
          timeout: '10s',
        }),
      { clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) }, carries: true },
    )
  })

  describe('the model-based test', () => {
    const failures: RedisStoreError[] = []
    const clock = new ManualClock(123_456.789)
    afterEach(() => {
      expect(failures).toEqual([])
    })
    runStoreModel(
      'redisStore on a Redis Cluster',
      () =>
        redisStore({
          client,
          prefix: uniquePrefix(),
          onError: 'deny',
          onFailure: (error) => failures.push(error),
          clock,
          // A busy machine must not turn a slow answer into onError's.
          timeout: '10s',
        }),
      {
        clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) },
        leaseTtlMs: 60_000,
        runs: 60,
      },
    )
  })

  describe('keys and slots', () => {
    it('refuses keys in different slots, so the tests below can fail', async () => {
      await expect(
        client.call('EVAL', 'return 1', '2', 'sluice:{a}:hourly', 'sluice:{b}:hourly'),
      ).rejects.toThrow('CROSSSLOT')
    })

    it('hashes every key of one decision to one slot, as the cluster does', async () => {
      for (const key of tricky) {
        const names = [hourly, daily, slots].map((p) => stateKey('sluice:', key, p))
        const hashed = await Promise.all(
          names.map((name) => client.call('CLUSTER', 'KEYSLOT', name)),
        )
        expect(new Set(hashed).size).toBe(1)
        expect(hashSlot(names[0]!)).toBe(hashed[0])
      }
    })

    it('runs multi-policy decisions, each client key on its own budget, on every shard', async () => {
      const { store, failures } = watchedStore(uniquePrefix())
      for (const key of tricky) {
        const first = await store.take(key, [hourly, daily, slots], 1)
        expect(first.allowed).toBe(true)
        await store.release(key, slots, first.results[2]!.lease!)
        expect((await store.take(key, [hourly, daily], 1)).allowed).toBe(true)
        const third = await store.take(key, [hourly, daily], 1)
        expect(third.results.map((r) => r.allowed)).toEqual([true, false])
        expect((await store.get(key, [hourly]))[0]!.remaining).toBe(1)
      }
      await store.refund('a}b', [hourly, daily], 1)
      expect((await store.get('a}b', [hourly, daily])).map((r) => r.remaining)).toEqual([2, 1])
      await store.reset('{x}')
      expect((await store.get('{x}', [hourly, daily])).map((r) => r.remaining)).toEqual([3, 2])
      expect((await store.get('}', [hourly, daily])).map((r) => r.remaining)).toEqual([1, 0])
      expect(failures).toEqual([])
    })

    it('resetAll scans and unlinks its prefix on every master', async () => {
      const prefix = uniquePrefix()
      const { store } = watchedStore(prefix)
      const masters = cluster.nodes.slice(0, 3)
      const keys = await Promise.all(masters.map((node, i) => keyOn(node, prefix, `reset${i}`)))
      for (const key of keys) await store.take(key, [daily], 1)
      const other = watchedStore(uniquePrefix()).store
      await other.take(keys[0]!, [daily], 1)
      await store.resetAll()
      for (const key of keys) expect((await store.get(key, [daily]))[0]!.remaining).toBe(2)
      expect((await other.get(keys[0]!, [daily]))[0]!.remaining).toBe(1)
    })
  })

  describe('a take whose reply is lost (issue 24 item 2)', () => {
    it('is admitted when the Cluster client sends it again, and holds one slot', async () => {
      const prefix = uniquePrefix()
      const key = 'lost'
      const slotPolicy = policy.concurrency('slot', 1)
      const master = await cluster.masterOf(stateKey(prefix, key, slotPolicy))
      const proxy = await replyDroppingProxy(master.port)
      try {
        // The client reaches that master through the proxy (as it announces itself). After
        // "Connection is closed" ioredis re-sends to a random master, and on the MOVED it
        // gets there it records the node's announced address, not the natMap's (ioredis
        // 5.11's `moved` handler), so through a natMap each retry is again a random master
        // (one in three): with the README's 4 redirections the re-send gave up in 7 of 25
        // runs. Without a natMap the MOVED leads straight to the master; this client gets
        // the redirections that make the random walk arrive ((2/3)^40 ≈ 1e-7 to miss).
        const own = await cluster.client({
          natMap: { [`127.0.0.1:${master.port}`]: { host: '127.0.0.1', port: proxy.port } },
          maxRedirections: 40,
        })
        const failures: RedisStoreError[] = []
        const store = redisStore({
          client: own,
          prefix,
          timeout: 5_000,
          onError: 'deny',
          onFailure: (error) => failures.push(error),
        })
        await cluster.connect(master).script('LOAD', GENERAL.source)
        const lost = proxy.dropReplyTo(GENERAL.sha)
        const taken = await store.take(key, [slotPolicy, daily], 1)
        await lost
        expect(taken.allowed).toBe(true)
        expect((await store.get(key, [slotPolicy, daily])).map((r) => r.remaining)).toEqual([0, 1])
        await store.release(key, slotPolicy, taken.results[0]!.lease!)
        expect((await store.take(key, [slotPolicy], 1)).allowed).toBe(true)
        expect(failures).toEqual([])
      } finally {
        await proxy.close()
      }
    })
  })

  describe('failover (issue 19)', { timeout: 90_000 }, () => {
    it('a slot left MIGRATING: TRYAGAIN is that request’s, not an outage of the shard', async () => {
      const prefix = uniquePrefix()
      const { store, failures, recoveries } = watchedStore(prefix)
      const wide = policy.slidingWindow('wide', { limit: 100, window: HOUR })
      const key = 'migrating'
      const source = await cluster.masterOf(stateKey(prefix, key, daily))
      const target = cluster.nodes.slice(0, 3).find((node) => node.port !== source.port)!
      const others = await Promise.all(
        cluster.nodes.slice(0, 3).map((node, i) => keyOn(node, prefix, `healthy${i}`)),
      )
      // One policy's key exists (on the source), the other's does not.
      expect((await store.take(key, [daily], 1)).allowed).toBe(true)
      const slot = String(hashSlot(stateKey(prefix, key, daily)))
      await cluster.connect(target).call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id)
      await cluster.connect(source).call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id)
      try {
        // Both keys in one script: the source has one, so it answers TRYAGAIN.
        const split = await store.take(key, [daily, wide], 1)
        expect(split.allowed).toBe(false)
        await until(() => store.status === 'up', 'the shard is back in use')
        // One key at a time the slot still works: through the source, or ASK to the target.
        expect((await store.take(key, [daily], 1)).results[0]!.remaining).toBe(0)
        expect((await store.take(key, [wide], 1)).results[0]!.remaining).toBe(99)
        // Every shard, the source's other slots included, decides on Redis.
        for (const other of others) {
          expect((await store.take(other, [daily, wide], 1)).allowed).toBe(true)
        }
        expect(failures).toEqual([])
        expect(recoveries()).toBe(0)
      } finally {
        // The migration is called off: the slot stays where it was.
        await cluster.connect(source).call('CLUSTER', 'SETSLOT', slot, 'STABLE')
        await cluster.connect(target).call('CLUSTER', 'SETSLOT', slot, 'STABLE')
        await cluster.settle()
      }
    })

    // Issue 24 item 7: ioredis retries a TRYAGAIN until it gives up ("Too many Cluster
    // redirections", whose last error may be a MOVED from the random node it tried) or
    // until the store's own timeout: neither is an outage of the master.
    it.each([
      ['"Too many Cluster redirections"', { maxRedirections: 3, retryDelayOnTryAgain: 20 }, 5_000],
      ["the store's own timeout", { maxRedirections: 16, retryDelayOnTryAgain: 100 }, 300],
    ] as const)(
      'a TRYAGAIN that reaches the store as %s leaves the master in use',
      async (_, options, timeout) => {
        const prefix = uniquePrefix()
        const own = await cluster.client(options)
        const failures: RedisStoreError[] = []
        const store = redisStore({
          client: own,
          prefix,
          timeout,
          probeInterval: 100,
          onError: 'deny',
          onFailure: (error) => failures.push(error),
        })
        const wide = policy.slidingWindow('wide', { limit: 100, window: HOUR })
        const key = 'tryagain'
        const source = await cluster.masterOf(stateKey(prefix, key, daily))
        const target = cluster.nodes.slice(0, 3).find((node) => node.port !== source.port)!
        const neighbour = await keyOn(source, prefix, 'neighbour')
        expect((await store.take(key, [daily], 1)).allowed).toBe(true)
        const slot = String(hashSlot(stateKey(prefix, key, daily)))
        await cluster.connect(target).call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id)
        await cluster.connect(source).call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id)
        try {
          // ioredis retries on a random node, so the last error it reports varies: a few tries.
          for (let i = 0; i < 5; i++) {
            expect((await store.take(key, [daily, wide], 1)).allowed).toBe(false)
            // Not taken out of use, not even until a probe answers: the next request on
            // that master is decided on Redis.
            expect(store.status).toBe('up')
            const next = await store.take(neighbour, [daily], 1)
            expect(next.allowed).toBe(true)
            await store.refund(neighbour, [daily], 1)
          }
          expect(failures).toEqual([])
        } finally {
          await cluster.connect(source).call('CLUSTER', 'SETSLOT', slot, 'STABLE')
          await cluster.connect(target).call('CLUSTER', 'SETSLOT', slot, 'STABLE')
          await cluster.settle()
        }
      },
    )

    it('a master paused past timeout: its keys answered by onError, one failure, one recovery, a late take harmless', async () => {
      const prefix = uniquePrefix()
      const { store, failures, recoveries } = watchedStore(prefix)
      const victim = await cluster.masterOf(stateKey(prefix, 'paused-0', daily))
      const key = await keyOn(victim, prefix, 'paused')
      const healthy = await Promise.all(
        cluster.nodes
          .slice(0, 3)
          .filter((node) => node.port !== victim.port)
          .map((node, i) => keyOn(node, prefix, `alive${i}`)),
      )
      const bulkhead = policy.concurrency('bulkhead', 1)
      expect((await store.take(key, [daily], 1)).allowed).toBe(true)

      victim.server.pause()
      try {
        // Sent to the frozen master: the caller gives up after the timeout; the client
        // may deliver it later, to the old master or to the promoted one.
        expect((await store.take(key, [bulkhead], 1)).allowed).toBe(false)
        expect((await store.take(key, [daily], 1)).allowed).toBe(false)
        await until(() => failures.length > 0, 'the outage was reported')
        // The other shards decide on Redis throughout.
        for (const other of healthy)
          expect((await store.take(other, [daily], 1)).allowed).toBe(true)
        await until(
          async () => (await cluster.masterOf(stateKey(prefix, key, daily))).port !== victim.port,
          'the replica was promoted',
        )
      } finally {
        victim.server.resume()
      }
      await cluster.settle()
      await until(() => store.status === 'up', 'the store found the promoted replica')
      expect(failures).toHaveLength(1)
      expect(failures[0]!.code).toBe('ERR_SLUICE_REDIS_TIMEOUT')
      expect(recoveries()).toBe(1)
      // The frozen take holds no slot: refused past its deadline, or undone by the release
      // queued when it failed (sent once Redis answered, after that deadline).
      await until(
        async () => (await store.get(key, [bulkhead]))[0]!.remaining === 1,
        'no slot held',
      )
      expect((await store.take(key, [bulkhead], 1)).allowed).toBe(true)
      // The count made before the pause survived on the promoted replica.
      expect((await store.get(key, [daily]))[0]!.remaining).toBe(1)
    })

    it('a master killed under load with a full bulkhead: releases kept and replayed, one failure, one recovery', async () => {
      const prefix = uniquePrefix()
      const { store, failures, recoveries } = watchedStore(prefix)
      // A master the paused test left alone: its replica has followed it from the start.
      const masters = await cluster.masters()
      const target = cluster.nodes.slice(0, 3).find((node) => masters.includes(node))!
      const key = await keyOn(target, prefix, 'killed')
      const healthy = await Promise.all(
        (
          await Promise.all(
            ['h0', 'h1', 'h2', 'h3', 'h4', 'h5'].map(async (label) => ({
              label,
              node: await cluster.masterOf(stateKey(prefix, label, daily)),
            })),
          )
        )
          .filter(({ node }) => node.port !== target.port)
          .map(({ label }) => label),
      )
      const pool = policy.concurrency('pool', 2)
      const held = [await store.take(key, [pool], 1), await store.take(key, [pool], 1)]
      expect(held.map((taken) => taken.allowed)).toEqual([true, true])
      expect((await store.take(key, [pool], 1)).allowed).toBe(false)
      // The leases have reached the replica that will take over.
      expect(await cluster.connect(target).call('WAIT', '1', '2000')).toBe(1)

      const rate = policy.fixedWindow('rate', { limit: 1_000_000, window: DAY })
      const load = startLoad(store, [key, ...healthy], [rate])
      await sleep(100)
      await target.server.kill()
      // The requests finish while their master is down: their releases cannot reach it.
      for (const taken of held) await store.release(key, pool, taken.results[0]!.lease!)
      await until(() => failures.length > 0, 'the outage was reported')
      await cluster.settle()
      await until(() => store.status === 'up', 'the store found the promoted replica')
      // The releases were sent again: both slots are free on the promoted replica, long
      // before the leases would expire (a minute).
      await until(async () => (await store.get(key, [pool]))[0]!.remaining === 2, 'slots freed')
      expect((await store.take(key, [pool], 1)).allowed).toBe(true)
      expect((await store.take(key, [pool], 1)).allowed).toBe(true)
      const admitted = await load.finish()
      expect(failures).toHaveLength(1)
      expect(recoveries()).toBe(1)
      // The killed master's key was refused while it was down (onError 'deny'); the other
      // shards' keys were decided on Redis throughout.
      expect(admitted.get(key)).toContain(false)
      for (const other of healthy) expect(admitted.get(other)!.every(Boolean)).toBe(true)
    })
  })
})
