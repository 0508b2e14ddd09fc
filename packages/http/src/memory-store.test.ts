import { ManualClock } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { memoryStore } from './memory-store'
import { compilePolicy, concurrencyPolicy, type PolicyOptions } from './policy'
import { runStoreContract } from './testing/store-contract'

const contractClock = new ManualClock()
runStoreContract('memoryStore', () => memoryStore({ clock: contractClock }), {
  advance: (ms) => contractClock.advance(ms),
})

const policyOf = (options: PolicyOptions) => compilePolicy(options, 'test')

describe('memoryStore', () => {
  it('answers synchronously', () => {
    const store = memoryStore()
    const p = policyOf({ limit: 1, window: '1s' })
    const taken = store.take('k', [p], 1)
    expect(taken).not.toBeInstanceOf(Promise)
    expect(taken.allowed).toBe(true)
  })

  it('keeps at most maxKeys keys under a flood of 100,000 distinct keys', () => {
    const store = memoryStore({ maxKeys: 1_000 })
    const p = policyOf({ limit: 10, window: '1m' })
    let admitted = 0
    for (let i = 0; i < 100_000; i++) if (store.take(`flood-${i}`, [p], 1).allowed) admitted++
    expect(admitted).toBe(100_000)
    expect(store.size).toBe(1_000)
  })

  it('keeps a hot key that keeps talking through a flood, so its budget is not reset', () => {
    const clock = new ManualClock()
    const store = memoryStore({ maxKeys: 100, clock })
    const p = policyOf({ limit: 5, window: '1m' })
    for (let i = 0; i < 5; i++) store.take('hot', [p], 1)
    // 99 strangers between two of the hot key's requests fit in the LRU beside it.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 99; i++) store.take(`spoof-${round}-${i}`, [p], 1)
      expect(store.take('hot', [p], 1).allowed).toBe(false)
    }
    expect(store.size).toBe(100)
  })

  it('drops a key once maxKeys other keys arrived since its last request (documented)', () => {
    const store = memoryStore({ maxKeys: 100 })
    const p = policyOf({ limit: 2, window: '1h' })
    store.take('quiet', [p], 2)
    expect(store.take('quiet', [p], 1).allowed).toBe(false)
    for (let i = 0; i < 100; i++) store.take(`other-${i}`, [p], 1)
    expect(store.get('quiet', [p])[0]?.remaining).toBe(2)
    expect(store.take('quiet', [p], 1).allowed).toBe(true)
  })

  it('expires an entry only once its limiter is back to fresh', () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const p = policyOf({ algorithm: 'fixed-window', limit: 2, window: '1s' })
    store.take('k', [p], 2)
    clock.advance(999)
    expect(store.take('k', [p], 1).allowed).toBe(false)
    expect(store.size).toBe(1)
    clock.advance(2)
    expect(store.get('k', [p])[0]?.remaining).toBe(2)
    expect(store.take('k', [p], 1).allowed).toBe(true)
  })

  it('purges a stale (fresh) entry on access, so it no longer counts toward size', () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const p = policyOf({ algorithm: 'token-bucket', limit: 10, window: '1s' })
    store.take('a', [p], 5)
    clock.advance(499)
    store.refund('a', [p], 1)
    expect(store.size).toBe(1)
    clock.advance(1_000)
    // `refund` reads through the LRU: an expired entry is dropped, not refunded.
    store.refund('a', [p], 1)
    expect(store.size).toBe(0)
  })

  it('never expires a warm-up entry by TTL: a recreated limiter would start cold', () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const p = policyOf({ algorithm: 'warm-up', limit: 3, window: '1s', warmUp: '10s' })
    store.take('w', [p], 1)
    clock.advance(60_000)
    store.refund('w', [p], 1)
    expect(store.size).toBe(1)
    // Warm by now: the full capacity of 3 is available at once.
    expect([1, 2, 3, 4].map(() => store.take('w', [p], 1).allowed)).toEqual([
      true,
      true,
      true,
      false,
    ])
  })

  it('never drops a key with slots in flight, however many keys flood the LRU', () => {
    const store = memoryStore({ maxKeys: 10 })
    const slots = concurrencyPolicy('slots', 1)
    const rate = policyOf({ limit: 100, window: '1h', name: 'rate' })
    const held = store.take('busy', [rate, slots], 1)
    for (let i = 0; i < 1_000; i++) store.take(`flood-${i}`, [rate], 1)
    expect(store.size).toBe(10)
    expect(store.inFlight).toBe(1)
    expect(store.take('busy', [slots], 1).allowed).toBe(false)
    store.release('busy', slots, held.results[1]!.lease!)
    expect(store.inFlight).toBe(0)
    expect(store.take('busy', [slots], 1).allowed).toBe(true)
  })

  it('counts permits in flight over all keys and forgets them on reset', () => {
    const store = memoryStore()
    const slots = concurrencyPolicy('slots', 3)
    store.take('a', [slots], 2)
    const b = store.take('b', [slots], 1)
    expect(store.inFlight).toBe(3)
    store.reset('a')
    expect(store.inFlight).toBe(1)
    store.reset('b', [slots])
    expect(store.inFlight).toBe(0)
    // A lease that outlived a reset releases nothing.
    store.release('b', slots, b.results[0]!.lease!)
    expect(store.inFlight).toBe(0)
  })

  it('keeps two different policies under one name apart, and shares a budget under one spec', () => {
    const store = memoryStore()
    const tight = policyOf({ name: 'api', limit: 1, window: '1m' })
    const loose = policyOf({ name: 'api', limit: 5, window: '1m' })
    const twin = policyOf({ name: 'api', limit: 1, window: '1m' })
    expect(store.take('k', [tight], 1).allowed).toBe(true)
    expect(store.take('k', [twin], 1).allowed).toBe(false)
    // Issue 10: this answered 500 on every request, after the first policy took a permit.
    expect(store.take('k', [loose], 1).results[0]?.remaining).toBe(4)
  })

  it('validates its options', () => {
    expect(() => memoryStore({ maxKeys: 0 })).toThrow(
      new RangeError('memoryStore: "maxKeys" must be a positive integer, got 0'),
    )
    expect(() => memoryStore({ maxKeys: '10' as unknown as number })).toThrow(
      new TypeError('memoryStore: "maxKeys" must be a positive integer, got "10"'),
    )
    expect(() => memoryStore(null as unknown as {})).toThrow(
      new TypeError('memoryStore: options must be an object, got null'),
    )
    // Issue 11: a misspelt option was ignored; a huge maxKeys failed on every request.
    expect(() => memoryStore({ maxkeys: 10 } as never)).toThrow(
      new TypeError('memoryStore: unknown option "maxkeys" (did you mean "maxKeys"?)'),
    )
    expect(() => memoryStore({ maxKeys: 1e308 })).toThrow(
      new RangeError('memoryStore: "maxKeys" must be a positive integer, got 1e+308'),
    )
    expect(() => memoryStore({ maxKeys: 2 ** 40 })).toThrow(
      new RangeError(`memoryStore: "maxKeys" must be at most 10000000, got ${2 ** 40}`),
    )
  })
})
