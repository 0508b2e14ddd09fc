import diagnostics from 'node:diagnostics_channel'
import { ManualClock } from '@sluice/core'
import type { StoreEvent } from '@sluice/http'
import { compilePolicy, concurrencyPolicy } from '@sluice/keyed/store'
import { afterEach, describe, expect, it } from 'vitest'
import { type DurableObjectStoreError, durableObjectStore } from '../src/index'
import { inProcessNamespace } from './in-process'

const policy = compilePolicy(
  { name: 'api', algorithm: 'fixed-window', limit: 2, window: '1h' },
  'test',
)
const slots = concurrencyPolicy('slots', 1)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const events: StoreEvent[] = []
const onEvent = (message: unknown) => {
  events.push(message as StoreEvent)
}
diagnostics.subscribe('sluice:store', onEvent)
afterEach(() => {
  events.length = 0
})

function setup(onError: 'deny' | 'allow' | 'local') {
  const objects = inProcessNamespace(new ManualClock(1_800_000_000_000))
  const failures: DurableObjectStoreError[] = []
  let recoveries = 0
  const store = durableObjectStore({
    namespace: objects.namespace,
    onError,
    timeout: 30,
    probeInterval: 20,
    onFailure: (error) => failures.push(error),
    onRecovery: () => recoveries++,
  })
  return { objects, store, failures, recoveries: () => recoveries }
}

describe('durableObjectStore when the objects fail', () => {
  it("'deny' refuses while they fail, reports once, and goes back to them once one answers", async () => {
    const { objects, store, failures, recoveries } = setup('deny')
    expect((await store.take('k', [policy], 1)).allowed).toBe(true)
    objects.fault('fail')
    const refused = await store.take('k', [policy], 1)
    expect(refused.allowed).toBe(false)
    expect(refused.results[0]).toMatchObject({ remaining: 0, retryAfterMs: 20 })
    expect((await store.take('k', [policy], 1)).allowed).toBe(false)
    expect(store.status).toBe('down')
    expect(failures.map((f) => f.code)).toEqual(['ERR_SLUICE_DO'])
    expect(events.map((e) => [e.event, e.store])).toEqual([['failure', 'durableObjectStore']])
    // Within probeInterval decisions do not even try the objects.
    const calls = objects.calls
    await store.take('k', [policy], 1)
    expect(objects.calls).toBe(calls)
    objects.fault(undefined)
    await sleep(25)
    const back = await store.take('k', [policy], 1)
    expect([back.allowed, back.results[0]?.remaining]).toEqual([true, 0])
    expect([store.status, recoveries()]).toEqual(['up', 1])
    expect(events.map((e) => e.event)).toEqual(['failure', 'recovery'])
  })

  it('an object that does not answer within timeout counts as failed', async () => {
    const { objects, store, failures } = setup('allow')
    objects.fault('hang')
    const started = performance.now()
    const taken = await store.take('k', [policy, slots], 1)
    expect(performance.now() - started).toBeLessThan(1_000)
    expect(taken.allowed).toBe(true)
    expect(failures.map((f) => f.code)).toEqual(['ERR_SLUICE_DO_TIMEOUT'])
    // 'allow' admits uncounted; its slot is no slot, and releasing it asks nobody.
    const lease = taken.results[1]?.lease
    expect(lease?.id).toMatch(/^uncounted:/)
    const calls = objects.calls
    await store.release('k', slots, lease!)
    expect(objects.calls).toBe(calls)
  })

  it("'local' limits in this isolate meanwhile, and its slots are released there", async () => {
    const { objects, store } = setup('local')
    objects.fault('fail')
    expect((await store.take('k', [policy], 1)).allowed).toBe(true)
    expect((await store.take('k', [policy], 1)).allowed).toBe(true)
    expect((await store.take('k', [policy], 1)).allowed).toBe(false)
    const held = await store.take('k', [slots], 1)
    expect(held.results[0]?.lease?.id).toMatch(/^local:/)
    expect((await store.take('k', [slots], 1)).allowed).toBe(false)
    await store.release('k', slots, held.results[0]!.lease!)
    expect((await store.take('k', [slots], 1)).allowed).toBe(true)
  })

  it('reset and resetAll throw: they have no answer to fall back on', async () => {
    const { objects, store } = setup('local')
    objects.fault('fail')
    await expect(store.reset('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_DO' })
    await expect(store.resetAll()).rejects.toMatchObject({ code: 'ERR_SLUICE_DO' })
  })

  it('state kept in storage outlives the object in memory', async () => {
    const { objects, store } = setup('deny')
    await store.take('k', [policy], 1)
    objects.evict()
    const taken = await store.take('k', [policy], 1)
    expect([taken.allowed, taken.results[0]?.remaining]).toEqual([true, 0])
    expect((await store.take('k', [policy], 1)).allowed).toBe(false)
  })

  it('checks its options', () => {
    const { namespace } = inProcessNamespace(new ManualClock())
    expect(() => durableObjectStore({ namespace: {} as never })).toThrow(
      'durableObjectStore: "namespace" must be a Durable Object namespace binding (env.SLUICE), got an object',
    )
    expect(() => durableObjectStore({ namespace, shards: 0 })).toThrow(
      new RangeError('durableObjectStore: "shards" must be an integer from 1 to 1024, got 0'),
    )
    expect(() => durableObjectStore({ namespace, onError: 'open' as never })).toThrow(
      "durableObjectStore: \"onError\" must be one of 'deny', 'allow', 'local', got \"open\"",
    )
    expect(() => durableObjectStore({ namespace, timout: '1s' } as never)).toThrow(
      'durableObjectStore: unknown option "timout" (did you mean "timeout"?)',
    )
  })
})
