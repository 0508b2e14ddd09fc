import { describe, expect, it } from 'vitest'
import { runFixture } from './run-fixture'

// Real node:cluster: a primary process hosting the store and forked workers using it
// (test/fixtures/cluster-app.ts). Slow to start on a loaded machine: five tsx processes.
describe('clusterStore on node:cluster', () => {
  it('four workers hammering one key admit exactly the limit between them', async () => {
    const { admitted, attempts, remaining } = await runFixture<{
      admitted: number[]
      attempts: number[]
      remaining: number
    }>('cluster-app.ts', ['hammer'])
    expect(attempts).toEqual([600, 600, 600, 600])
    // 2,400 attempts at a limit of 1,000: one budget, not four.
    expect(admitted.reduce((a, b) => a + b, 0)).toBe(1000)
    expect(remaining).toBe(0)
  }, 60_000)

  it.each([
    // Overshoot bound N × B: 4 workers × blocks of 1% of 1,000 = 40; 0 for a fixed window.
    { algorithm: 'sliding-window', bound: 40 },
    { algorithm: 'fixed-window', bound: 0 },
  ])(
    'with leases, four workers stay within the stated bound ($algorithm)',
    async ({ algorithm, bound }) => {
      const { admitted } = await runFixture<{ admitted: number[] }>('cluster-app.ts', ['hammer'], {
        LEASE_SHARE: '0.01',
        ALGORITHM: algorithm,
      })
      const total = admitted.reduce((a, b) => a + b, 0)
      expect(total).toBeLessThanOrEqual(1000 + bound)
      // Blocks still held when the attempts run out (at most one per worker) go unspent.
      expect(total).toBeGreaterThanOrEqual(1000 - 4 * 10)
    },
    60_000,
  )

  it.each([
    { mode: 'exact', env: {} },
    // Leased slots (share 0.5 of max 4: two per lease) are held at the host for the worker too.
    { mode: 'leased', env: { LEASE_SHARE: '0.5' } },
  ])(
    "a killed worker's bulkhead slots are free again ($mode)",
    async ({ env }) => {
      const result = await runFixture<{
        held: number
        before: number
        after: number
        inFlight: number
      }>('cluster-app.ts', ['crash'], env)
      // The first worker holds all 4 slots; the second gets none until the first is killed.
      expect(result).toEqual({ held: 4, before: 0, after: 4, inFlight: 0 })
    },
    60_000,
  )

  it('a primary that stops answering makes the worker follow onError, then recover', async () => {
    const { events, report } = await runFixture<{
      events: { test: string; code?: string }[]
      report: Record<string, unknown>
    }>('cluster-app.ts', ['freeze'], {
      WORKERS: '1',
      ON_ERROR: 'deny',
      TIMEOUT: '200ms',
      FLAG: `${process.pid}-${Date.now()}`,
    })
    expect(events).toEqual([
      { test: 'failure', code: 'ERR_SLUICE_CLUSTER_TIMEOUT' },
      { test: 'recovery' },
    ])
    expect(report).toEqual({
      test: 'report',
      first: { allowed: true, remaining: 9 },
      // onError 'deny': refused, to be tried again after probeInterval.
      during: { allowed: false, remaining: 0, retryAfterMs: 100 },
      statusDuring: 'down',
      // The take sent during the freeze reached the primary late and counted there.
      later: { allowed: true, remaining: 7, status: 'up' },
    })
  }, 60_000)
})
