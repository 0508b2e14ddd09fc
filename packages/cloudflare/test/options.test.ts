import { ManualClock } from '@sluice/core'
import { compilePolicy } from '@sluice/keyed/store'
import { warningsOf } from '@sluice/keyed/testing'
import { describe, expect, it } from 'vitest'
import { durableObjectStore } from '../src/index'
import { inProcessNamespace } from './in-process'

describe('durableObjectStore: durations in bare milliseconds', () => {
  it('warns once for each of timeout, leaseTtl and probeInterval', () => {
    const { namespace } = inProcessNamespace(new ManualClock())
    expect(
      warningsOf(() => {
        durableObjectStore({ namespace, timeout: 2, leaseTtl: 60, probeInterval: 5 })
        durableObjectStore({ namespace, timeout: 2, leaseTtl: 60, probeInterval: 5 })
        durableObjectStore({ namespace, timeout: '2s', leaseTtl: 60_000, probeInterval: '5s' })
      }),
    ).toEqual(
      [
        ['timeout', 2],
        ['leaseTtl', 60],
        ['probeInterval', 5],
      ].map(([option, value]) => [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining(
          `durableObjectStore: "${option}" is ${value}, which is ${value} milliseconds`,
        ),
      ]),
    )
  })
})

describe('durableObjectStore: lease', () => {
  it('leases blocks from the objects: 1,000 decisions in 11 calls or fewer', async () => {
    const clock = new ManualClock()
    const { namespace } = inProcessNamespace(clock)
    let calls = 0
    const counted = {
      idFromName: (name: string) => namespace.idFromName(name),
      get: (id: unknown) => {
        const stub = namespace.get(id as never)
        return {
          fetch: (...args: Parameters<typeof stub.fetch>) => {
            calls++
            return stub.fetch(...args)
          },
        }
      },
    }
    const store = durableObjectStore({ namespace: counted as never, lease: { share: 0.01, clock } })
    const policy = compilePolicy({ algorithm: 'fixed-window', limit: 10_000, window: '1h' }, 'test')
    let admitted = 0
    for (let i = 0; i < 1000; i++) if ((await store.take('k', [policy], 1)).allowed) admitted++
    expect(admitted).toBe(1000)
    // The first decision is exact, then blocks of 100 topped up once three quarters are spent.
    expect(calls).toBeLessThanOrEqual(2 + 1000 / 75)
    expect(store.status).toBe('up')
  })

  it('names the option and the value when it is wrong', () => {
    const { namespace } = inProcessNamespace(new ManualClock())
    expect(() => durableObjectStore({ namespace, lease: { share: 2 } })).toThrow(
      'durableObjectStore: "lease.share" must be a number above 0 and at most 1, got 2',
    )
  })
})
