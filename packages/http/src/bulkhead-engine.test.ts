import { ManualClock } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import { BulkheadEngine, type BulkheadOptions } from './bulkhead-engine'
import { memoryStore } from './memory-store'

interface FakeRequest {
  gone?: AbortController
}

const request: RequestAccessors<FakeRequest> = {
  ip: () => '10.0.0.1',
  method: () => 'GET',
  path: () => '/',
  route: () => undefined,
  header: () => undefined,
}
const response: ResponseAccessors<FakeRequest, unknown> = {
  getHeader: () => undefined,
  setHeader: () => {},
  signal: (req) => {
    req.gone ??= new AbortController()
    return req.gone.signal
  },
}

const setup = (options: BulkheadOptions = {}) => {
  const clock = new ManualClock()
  const store = memoryStore({ clock })
  return {
    clock,
    store,
    engine: new BulkheadEngine({ store, clock, ...options }, request, response),
  }
}

describe('BulkheadEngine', () => {
  it('holds a slot until release, and release counts only once', () => {
    const { store, engine } = setup({ max: 2 })
    const a = engine.enter({}, undefined)
    const b = engine.enter({}, undefined)
    expect([a, b]).not.toContainEqual(expect.any(Promise))
    expect(store.inFlight).toBe(2)
    const full = engine.enter({}, undefined) as { allowed: boolean; release(): void }
    expect(full.allowed).toBe(false)
    full.release()
    expect(store.inFlight).toBe(2)
    ;(a as { release(): void }).release()
    ;(a as { release(): void }).release()
    expect(store.inFlight).toBe(1)
  })

  it('hands a freed slot to the queue in FIFO order', async () => {
    const { store, engine } = setup({ max: 1, maxQueue: 2 })
    const holder = engine.enter({}, undefined) as { release(): void }
    const order: string[] = []
    const entered = (name: string) =>
      Promise.resolve(engine.enter({}, undefined)).then((decision) => {
        order.push(name)
        return decision
      })
    const second = entered('second')
    const third = entered('third')
    expect(engine.queued()).toBe(2)
    expect((await engine.enter({}, undefined)).allowed).toBe(false)
    holder.release()
    ;(await second).release()
    expect((await third).allowed).toBe(true)
    expect(order).toEqual(['second', 'third'])
    expect(store.inFlight).toBe(1)
    expect(engine.queued()).toBe(0)
  })

  it('gives up after queueTimeout, on its clock', async () => {
    const { clock, engine } = setup({ max: 1, maxQueue: 1, queueTimeout: '2s' })
    engine.enter({}, undefined)
    const waiting = Promise.resolve(engine.enter({}, undefined))
    await clock.advanceAsync(1_999)
    expect(engine.queued()).toBe(1)
    await clock.advanceAsync(1)
    expect((await waiting).allowed).toBe(false)
    expect(engine.queued()).toBe(0)
  })

  it('drops a queued request whose client leaves, without taking a slot', async () => {
    const { store, engine } = setup({ max: 1, maxQueue: 1 })
    const holder = engine.enter({}, undefined) as { release(): void }
    const quitter: FakeRequest = {}
    const waiting = Promise.resolve(engine.enter(quitter, undefined))
    const reason = new Error('gone')
    quitter.gone?.abort(reason)
    await expect(waiting).rejects.toBe(reason)
    expect(engine.queued()).toBe(0)
    holder.release()
    expect(store.inFlight).toBe(0)
  })
})
