import { rmSync } from 'node:fs'
import { ManualClock } from '@sluice/core'
import { keyedLimiter } from '@sluice/keyed'
import { makePolicy } from '@sluice/keyed/store'
import { runStoreContract, runStoreModel } from '@sluice/keyed/testing'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { type ClusterStore, ClusterStoreError, clusterStore } from '../src/index'
import { startFixture } from './run-fixture'
import { socketPath, waitForSocket } from './socket'

// The socket transport (PM2 cluster mode): a host and a worker in this process, on a real
// Unix socket, every call through the same JSON messages a worker in another process sends.
let names = 0
const opened: ClusterStore[] = []

async function pair(options: { clock?: ManualClock } = {}) {
  const path = socketPath('pair')
  const name = `pair${++names}`
  const host = clusterStore({ transport: 'socket', host: true, path, name, ...options })
  await waitForSocket(path)
  const worker = clusterStore({ transport: 'socket', host: false, path, name, onError: 'deny' })
  opened.push(host, worker)
  return { host, worker }
}

afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()))
})

// The host decides on a ManualClock the tests move (the contract's rate tables need it).
const clock = new ManualClock()
const timed = pair({ clock })
runStoreContract('clusterStore (socket)', async () => (await timed).worker, {
  clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) },
  carries: true,
})
runStoreModel('clusterStore (socket)', async () => (await timed).worker, {
  clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) },
})

describe('clusterStore on a socket', () => {
  it('the host and its workers share one budget', async () => {
    const { host, worker } = await pair()
    const policy = makePolicy({ algorithm: 'fixed-window', limit: 3, window: 3_600_000 }, 'shared')
    expect((await worker.take('k', [policy], 2)).results[0]!.remaining).toBe(1)
    expect((await host.take('k', [policy], 1)).results[0]!.remaining).toBe(0)
    expect((await worker.take('k', [policy], 1)).allowed).toBe(false)
    expect(host.role).toBe('host')
    expect(worker.role).toBe('worker')
  })

  it('with leases a worker takes a block in one call, decides locally, and gives back what it did not spend', async () => {
    const path = socketPath('lease')
    const name = `lease${++names}`
    const host = clusterStore({ transport: 'socket', host: true, path, name })
    opened.push(host)
    await waitForSocket(path)
    const worker = clusterStore({
      transport: 'socket',
      host: false,
      path,
      name,
      lease: { share: 0.01, ttl: '1h' },
    })
    const policy = makePolicy(
      { algorithm: 'fixed-window', limit: 10_000, window: 3_600_000 },
      'leased',
    )
    for (let i = 0; i < 50; i++) expect((await worker.take('k', [policy], 1)).allowed).toBe(true)
    // A key's first decision is exact (one permit), then one block of share × limit = 100
    // permits is taken at the host in one call; the other 49 are spent from it here.
    expect((await host.get('k', [policy]))[0]!.remaining).toBe(9_899)
    await worker.close()
    await expect.poll(async () => (await host.get('k', [policy]))[0]!.remaining).toBe(9_950)
  })

  it('a reservation settles in one message to the host: below, above, and both at once (per policy)', async () => {
    // The host's clock stands still: a token bucket of 100,000 a minute refills every 0.6 ms.
    const { worker } = await pair({ clock: new ManualClock() })
    const limiter = keyedLimiter({
      store: worker,
      policies: [
        { name: 'requests', limit: 60, window: '1m' },
        { name: 'tokens', limit: 100_000, window: '1m', algorithm: 'token-bucket' },
        { name: 'monthly', limit: 2_000_000, window: '30d', algorithm: 'fixed-window' },
      ],
    })
    // A settle is neither a refund nor a force of its own: one call, the state answered.
    const refund = vi.spyOn(worker, 'refund')
    const force = vi.spyOn(worker, 'force')
    const get = vi.spyOn(worker, 'get')
    const settle = vi.spyOn(worker, 'settle')
    const estimate = { requests: 1, tokens: 4000, monthly: 4000 }
    const left = async (actual: Record<string, number>) => {
      const settled = await (await limiter.reserve('org', estimate)).settle(actual)
      return settled.policies.map((p) => p.remaining)
    }
    expect(await left({ requests: 1, tokens: 1500, monthly: 1500 })).toEqual([
      59, 98_500, 1_998_500,
    ])
    expect(await left({ requests: 1, tokens: 5000, monthly: 5000 })).toEqual([
      58, 93_500, 1_993_500,
    ])
    expect(await left({ requests: 1, tokens: 1000, monthly: 6000 })).toEqual([
      57, 92_500, 1_987_500,
    ])
    expect(settle).toHaveBeenCalledTimes(3)
    expect([refund, force, get].map((spy) => spy.mock.calls.length)).toEqual([0, 0, 0])
  })

  it("a closed worker's slots are free again", async () => {
    const { host } = await pair()
    const path = socketPath('slots')
    const name = `slots${++names}`
    const owner = clusterStore({ transport: 'socket', host: true, path, name })
    opened.push(owner)
    await waitForSocket(path)
    const worker = clusterStore({ transport: 'socket', host: false, path, name })
    const slots = makePolicy({ algorithm: 'concurrency', max: 2, maxQueue: 0 }, 'slots')
    expect((await worker.take('k', [slots], 2)).allowed).toBe(true)
    expect((await owner.take('k', [slots], 1)).allowed).toBe(false)
    await worker.close()
    // The socket's close reaches the host after this turn; its next decision sees it.
    await expect.poll(async () => (await owner.get('k', [slots]))[0]!.remaining).toBe(2)
    expect(host.status).toBe('up')
  })

  it('the death of the hosting process makes workers follow onError until a host answers again', async () => {
    const path = socketPath('death')
    const failures: string[] = []
    let recoveries = 0
    const start = async () => {
      const fixture = startFixture('socket-host.ts', [path])
      await expect.poll(fixture.output, { timeout: 20_000 }).toContain('READY')
      return fixture
    }
    const first = await start()
    const worker = clusterStore({
      transport: 'socket',
      host: false,
      path,
      onError: 'deny',
      probeInterval: '50ms',
      onFailure: (error) => failures.push(error.code),
      onRecovery: () => recoveries++,
    })
    opened.push(worker)
    const policy = makePolicy({ algorithm: 'fixed-window', limit: 5, window: 3_600_000 }, 'death')
    expect((await worker.take('k', [policy], 1)).results[0]!.remaining).toBe(4)

    first.child.kill('SIGKILL')
    await first.exited
    const refused = await worker.take('k', [policy], 1)
    expect(refused.allowed).toBe(false)
    expect(refused.results[0]!.retryAfterMs).toBe(50)
    expect(worker.status).toBe('down')
    // Reported once a probe fails too (a failed call alone may be that call's).
    await expect.poll(() => failures).toEqual(['ERR_SLUICE_CLUSTER_CLOSED'])
    await expect(worker.reset('k')).rejects.toBeInstanceOf(ClusterStoreError)

    const second = await start()
    await expect.poll(() => worker.status, { timeout: 5_000 }).toBe('up')
    expect(recoveries).toBe(1)
    // A new host starts from a fresh state: the first host's count died with it.
    expect((await worker.take('k', [policy], 1)).results[0]!.remaining).toBe(4)
    second.child.kill('SIGKILL')
    await second.exited
    // A killed host leaves its socket file behind (the next host would remove it).
    rmSync(path, { force: true })
  }, 60_000)
})
