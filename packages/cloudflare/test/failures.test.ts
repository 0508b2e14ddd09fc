import diagnostics from 'node:diagnostics_channel'
import { ManualClock } from '@sluice/core'
import type { StoreEvent } from '@sluice/http'
import { memoryStore } from '@sluice/keyed'
import { compilePolicy, concurrencyPolicy } from '@sluice/keyed/store'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  type DurableObjectNamespaceLike,
  type DurableObjectStoreError,
  durableObjectStore,
} from '../src/index'
import { shardOf } from '../src/store'
import { inProcessNamespace } from './in-process'

const policy = compilePolicy(
  { name: 'api', algorithm: 'fixed-window', limit: 2, window: '1h' },
  'test',
)
const slots = concurrencyPolicy('slots', 1)

const events: StoreEvent[] = []
const onEvent = (message: unknown) => {
  events.push(message as StoreEvent)
}
diagnostics.subscribe('sluice:store', onEvent)
// The store's health counts probeInterval on performance.now(): on a clock of the test's,
// so that a busy machine cannot let a probe through early. Timeouts stay on real timers.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['performance'] })
})
afterEach(() => {
  vi.useRealTimers()
  events.length = 0
})

function setup(onError: 'deny' | 'allow' | 'local', local?: ReturnType<typeof memoryStore>) {
  const objects = inProcessNamespace(new ManualClock(1_800_000_000_000))
  const failures: DurableObjectStoreError[] = []
  let recoveries = 0
  const store = durableObjectStore({
    namespace: objects.namespace,
    onError,
    ...(local === undefined ? {} : { local }),
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
    vi.advanceTimersByTime(25)
    const back = await store.take('k', [policy], 1)
    expect([back.allowed, back.results[0]?.remaining]).toEqual([true, 0])
    expect([store.status, recoveries()]).toEqual(['up', 1])
    expect(events.map((e) => e.event)).toEqual(['failure', 'recovery'])
  })

  it('an object that does not answer within timeout counts as failed', async () => {
    const { objects, store, failures } = setup('allow')
    objects.fault('hang')
    // Answered (not hung): the call gave up after timeout, as its error's code says.
    const taken = await store.take('k', [policy, slots], 1)
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

  it('takes only the failing object out of use: keys on the others stay on theirs', async () => {
    const { objects, store, failures } = setup('deny')
    const other = ['b', 'c', 'd', 'e'].find((key) => shardOf(key, 32) !== shardOf('a', 32))!
    objects.fault('fail', `sluice:${shardOf('a', 32)}`)
    expect((await store.take('a', [policy], 1)).allowed).toBe(false)
    expect(store.status).toBe('down')
    const calls = objects.calls
    const taken = await store.take(other, [policy], 1)
    expect([taken.allowed, taken.results[0]?.remaining, objects.calls - calls]).toEqual([
      true,
      1,
      1,
    ])
    expect(failures.length).toBe(1)
  })

  it("'local' takes its refunds back, the object answering again or not", async () => {
    const local = memoryStore()
    const { objects, store } = setup('local', local)
    objects.fault('fail')
    const taken = await store.take('k', [policy], 1)
    expect(taken.results[0]?.receipt).toBeLessThan(0)
    objects.fault(undefined)
    vi.advanceTimersByTime(25)
    expect((await store.take('k', [policy], 1)).results[0]?.remaining).toBe(1)
    expect(store.status).toBe('up')
    // Given back where it was taken: the local store, not the object's budget.
    await store.refund(
      'k',
      [policy],
      1,
      taken.results.map((r) => r.receipt),
    )
    expect((await local.get('k', [policy]))[0]?.remaining).toBe(2)
    expect((await store.get('k', [policy]))[0]?.remaining).toBe(1)
  })

  it('a take the object runs twice (its answer lost, the call sent again) holds one slot and counts once', async () => {
    const objects = inProcessNamespace(new ManualClock(1_800_000_000_000))
    // Runs every take twice on its object and answers the second run, as a call whose
    // first answer never came back and was sent again would.
    const twice: DurableObjectNamespaceLike<string> = {
      idFromName: (name) => objects.namespace.idFromName(name),
      get(id) {
        const stub = objects.namespace.get(id)
        return {
          async fetch(url, init) {
            if (!init.body.startsWith('{"op":"take"')) return stub.fetch(url, init)
            await (await stub.fetch(url, init)).text()
            return stub.fetch(url, init)
          },
        }
      },
    }
    const store = durableObjectStore({ namespace: twice, onError: 'deny' })
    const taken = await store.take('k', [policy, slots], 1)
    expect(taken.allowed).toBe(true)
    expect(taken.results.map((r) => [r.remaining, r.lease?.permits])).toEqual([
      [1, undefined],
      [0, 1],
    ])
    expect((await store.get('k', [policy]))[0]?.remaining).toBe(1)
    expect((await store.take('k', [slots], 1)).allowed).toBe(false)
    await store.release('k', slots, taken.results[1]!.lease!)
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
    // The rules every remote store reads its options by (redisStore's).
    expect(() => durableObjectStore({ namespace, timeout: '30d' })).toThrow(
      new RangeError(
        'durableObjectStore: "timeout" must be at most 2147483647 ms (about 24.8 days), got "30d"',
      ),
    )
    expect(() => durableObjectStore({ namespace, timeout: '2s', leaseTtl: '1s' })).toThrow(
      new RangeError(
        'durableObjectStore: "leaseTtl" must be longer than "timeout" (2000 ms), or a slot could expire before its take is answered, got "1s"',
      ),
    )
    expect(() => durableObjectStore({ namespace, local: {} as never })).toThrow(
      new TypeError(
        'durableObjectStore: "local" must be a store (take, refund, force, block, release, get, reset, resetAll), got an object',
      ),
    )
  })
})
