import { ManualClock, type RateLimiter, slidingWindow, tokenBucket } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { boundedKey } from './key'
import { memoryStore } from './memory-store'
import { compilePolicy, concurrencyPolicy, type PolicyOptions } from './policy'
import { runStoreContract } from './testing/store-contract'
import { runStoreModel } from './testing/store-model'

const contractClock = new ManualClock()
runStoreContract('memoryStore', () => memoryStore({ clock: contractClock }), {
  clock: { now: () => contractClock.now(), advance: (ms) => contractClock.advance(ms) },
  carries: true,
})

const modelClock = new ManualClock(123_456.789)
runStoreModel('memoryStore', () => memoryStore({ clock: modelClock }), {
  clock: { now: () => modelClock.now(), advance: (ms) => modelClock.advance(ms) },
  runs: 200,
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

  it("carries a name's state to another spec of it, and shares a budget under one spec", () => {
    const store = memoryStore({ clock: new ManualClock() })
    const tight = policyOf({ name: 'api', limit: 2, window: '1m' })
    const loose = policyOf({ name: 'api', limit: 10, window: '1m' })
    const twin = policyOf({ name: 'api', limit: 2, window: '1m' })
    expect(store.take('k', [tight], 1).allowed).toBe(true)
    expect(store.take('k', [twin], 1).results[0]?.remaining).toBe(0)
    expect(store.take('k', [tight], 1).allowed).toBe(false)
    // Issue 10: this answered 500 on every request, after the first policy took a permit.
    // Proportional: all of 2 used is all of 10 used, not a fresh budget of 10.
    expect(store.take('k', [loose], 1).allowed).toBe(false)
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

describe('memoryStore rows', () => {
  it('keeps a sliding window per key in one slab: 2,000 keys decide as limiters of their own', () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const p = policyOf({ limit: 3, window: '1h', slots: 6 })
    const twins = new Map<string, RateLimiter>()
    const keys = Array.from({ length: 2_000 }, (_, i) => `client-${i}`)
    for (let round = 0; round < 5; round++) {
      clock.advance(round * 7 * 60_000) // crosses slots, and by round 4 the first has left
      for (const key of keys) {
        let twin = twins.get(key)
        if (twin === undefined) {
          twin = slidingWindow({ limit: 3, window: '1h', slots: 6, clock })
          twins.set(key, twin)
        }
        const taken = store.take(key, [p], 1)
        expect(taken.allowed).toBe(twin.tryAcquire())
        expect(taken.results[0]?.remaining).toBe(twin.availablePermits())
      }
    }
    expect(store.size).toBe(2_000)
  })

  it('starts an evicted key afresh while its neighbours in the slab keep their counts', () => {
    const store = memoryStore({ maxKeys: 50 })
    const p = policyOf({ limit: 2, window: '1h' })
    for (let i = 0; i < 50; i++) store.take(`k${i}`, [p], 2)
    for (let i = 50; i < 60; i++) store.take(`k${i}`, [p], 1) // evicts k0..k9
    expect(store.size).toBe(50)
    expect(store.get('k0', [p])[0]?.remaining).toBe(2)
    expect(store.get('k10', [p])[0]?.remaining).toBe(0)
    expect(store.get('k55', [p])[0]?.remaining).toBe(1)
  })

  it('refunds each key’s own slot by its receipt, in the slab', () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const p = policyOf({ limit: 1, window: 600, slots: 6 })
    const a = store.take('a', [p], 1)
    clock.advance(300)
    const b = store.take('b', [p], 1)
    clock.advance(400) // a's slot has left the window; b's has not
    expect(store.take('a', [p], 1).allowed).toBe(true)
    store.refund('a', [p], 1, [a.results[0]?.receipt])
    store.refund('b', [p], 1, [b.results[0]?.receipt])
    expect(store.take('a', [p], 1).allowed).toBe(false)
    expect(store.take('b', [p], 1).allowed).toBe(true)
  })

  it('reuses a key’s row when it went back to fresh between visits', () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock, maxKeys: 1 })
    const pace = policyOf({ algorithm: 'leaky-bucket', limit: 1, window: 10 })
    for (let i = 0; i < 100; i++) {
      expect(store.take('steady', [pace], 1).allowed).toBe(true)
      clock.advance(10)
    }
    expect(store.size).toBe(1)
    // With one slot in the LRU nobody else was evicted, and a second key still fits in turn.
    expect(store.take('other', [pace], 1).allowed).toBe(true)
    expect(store.size).toBe(1)
  })

  it('leaves nothing behind, and evicts nobody, for a new key refused at once', () => {
    const store = memoryStore({ maxKeys: 2 })
    const p = policyOf({ algorithm: 'fixed-window', limit: 2, window: '1h' })
    store.take('a', [p], 1)
    store.take('b', [p], 1)
    expect(store.take('greedy', [p], 3).allowed).toBe(false)
    expect(store.size).toBe(2)
    expect(store.get('a', [p])[0]?.remaining).toBe(1)
    expect(store.get('b', [p])[0]?.remaining).toBe(1)
  })

  it('checks several policies against one key atomically, each in its own slab', () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const policies = [
      policyOf({ name: 'minute', limit: 5, window: '1m', slots: 6 }),
      policyOf({ name: 'burst', algorithm: 'token-bucket', limit: 2, window: '1s' }),
    ]
    const twins = [
      slidingWindow({ limit: 5, window: '1m', slots: 6, clock }),
      tokenBucket({ limit: 2, window: '1s', clock }),
    ]
    const outcomes: boolean[] = []
    for (let i = 0; i < 12; i++) {
      const taken = store.take('k', policies, 1)
      const both = twins.every((t) => t.availablePermits() >= 1)
      if (both) for (const t of twins) t.tryAcquire()
      expect(taken.allowed).toBe(both)
      expect(taken.results.map((r) => r.remaining)).toEqual(twins.map((t) => t.availablePermits()))
      outcomes.push(taken.allowed)
      clock.advance(300)
    }
    // The bucket refused some while the window had room; the window then capped at 5.
    expect(outcomes.filter(Boolean)).toHaveLength(5)
    expect(outcomes.slice(0, 3)).toEqual([true, true, true])
  })
})

describe('memoryStore bulkhead slots', () => {
  const slotsOf = (lease: unknown) => (lease as { slots: object }).slots

  it('reuses an idle key’s slots instead of building them again for every request', () => {
    const store = memoryStore()
    const pool = concurrencyPolicy('pool', 2)
    const first = store.take('k', [pool], 1).results[0]!.lease!
    store.release('k', pool, first)
    const second = store.take('k', [pool], 1).results[0]!.lease!
    expect(slotsOf(second)).toBe(slotsOf(first))
    store.release('k', pool, second)
    expect(store.inFlight).toBe(0)
  })

  it('keeps idle keys only up to maxKeys, and busy ones always', () => {
    const store = memoryStore({ maxKeys: 2 })
    const pool = concurrencyPolicy('pool', 1)
    const busy = store.take('busy', [pool], 1).results[0]!.lease!
    for (let i = 0; i < 100; i++) {
      const lease = store.take(`idle-${i}`, [pool], 1).results[0]!.lease!
      store.release(`idle-${i}`, pool, lease)
    }
    expect(store.take('busy', [pool], 1).allowed).toBe(false)
    store.release('busy', pool, busy)
    expect(store.take('busy', [pool], 1).allowed).toBe(true)
    expect(store.get('idle-0', [pool])[0]?.remaining).toBe(1)
  })

  it('keeps a bulkhead apart from a rate policy even under one id (hand-made policies)', () => {
    const store = memoryStore()
    const rate = { ...policyOf({ limit: 5, window: '1h' }), id: 'same' }
    const pool = { ...concurrencyPolicy('pool', 1), id: 'same' }
    expect(store.take('k', [rate], 1).results[0]?.remaining).toBe(4)
    const lease = store.take('k', [pool], 1).results[0]!.lease!
    expect(store.take('k', [pool], 1).allowed).toBe(false)
    store.release('k', pool, lease)
    expect(store.take('k', [pool], 1).allowed).toBe(true)
    expect(store.get('k', [rate])[0]?.remaining).toBe(4)
  })

  it('a lease releases once, and never after a reset, even with the key busy again', () => {
    const store = memoryStore()
    const pool = concurrencyPolicy('pool', 1)
    const old = store.take('k', [pool], 1).results[0]!.lease!
    store.reset('k', [pool])
    const current = store.take('k', [pool], 1)
    expect(current.allowed).toBe(true)
    store.release('k', pool, old)
    expect(store.inFlight).toBe(1)
    expect(store.take('k', [pool], 1).allowed).toBe(false)
    const lease = current.results[0]!.lease!
    store.release('k', pool, lease)
    store.release('k', pool, lease)
    expect(store.inFlight).toBe(0)
    // A lease names its key: released under another, it frees nothing.
    const other = store.take('other', [pool], 1).results[0]!.lease!
    store.release('k', pool, other)
    expect(store.inFlight).toBe(1)
    expect(typeof other.id).toBe('string')
    expect(other.id).not.toBe(lease.id)
  })
})

describe('memoryStore: policies made per request stay bounded (issue 24)', () => {
  it('keeps at most maxStates states over all policies, the least recently used policy giving first', () => {
    const store = memoryStore({ maxKeys: 100, maxStates: 50 })
    // A limit a client picks (a plan header): every value is a policy of its own.
    const plans = Array.from({ length: 200 }, (_, i) => policyOf({ limit: i + 1, window: '1h' }))
    for (const plan of plans) store.take('client', [plan], 1)
    expect(store.size).toBe(50)
    // The 50 most recent plans kept their state; the first ones started over.
    expect(store.get('client', [plans[199]!])[0]?.remaining).toBe(199)
    expect(store.get('client', [plans[0]!])[0]?.remaining).toBe(1)
    // One policy with many keys is bounded by maxKeys, as before.
    const one = policyOf({ limit: 5, window: '1h', name: 'one' })
    for (let i = 0; i < 300; i++) store.take(`k${i}`, [one], 1)
    expect(store.get('k299', [one])[0]?.remaining).toBe(4)
    expect(store.size).toBeLessThanOrEqual(50)
  })

  it('never takes a state from a policy of the call under way', () => {
    const store = memoryStore({ maxKeys: 10, maxStates: 2 })
    const a = policyOf({ limit: 3, window: '1h', name: 'a' })
    const b = policyOf({ limit: 3, window: '1h', name: 'b' })
    expect(store.take('k', [a, b], 1).allowed).toBe(true)
    expect(store.take('k', [a, b], 1).results.map((r) => r.remaining)).toEqual([1, 1])
  })
})

describe('memoryStore: keys are bounded at the store (issue 24)', () => {
  it('keeps a long key as its digest whoever calls it, so maxKeys bounds bytes too', () => {
    const store = memoryStore()
    const p = policyOf({ limit: 2, window: '1h' })
    const long = 'x'.repeat(16_384)
    store.take(long, [p], 1)
    // The state sits under the digest: the long key itself is not kept.
    expect(store.get(boundedKey(long), [p])[0]?.remaining).toBe(1)
    store.reset(boundedKey(long))
    expect(store.get(long, [p])[0]?.remaining).toBe(2)
  })
})

describe('memoryStore: many specs under one name', () => {
  it('a spec beyond the sixteen kept carries the least recently used spec’s keys over first', () => {
    const store = memoryStore({ clock: new ManualClock() })
    const spec = (limit: number) =>
      policyOf({ name: 'api', algorithm: 'fixed-window', limit, window: '1m' })
    store.take('a', [spec(10)], 5)
    // Fifteen more specs touch another key: "a" stays written under the first one.
    for (let limit = 101; limit <= 115; limit++) store.take('b', [spec(limit)], 1)
    // The seventeenth takes over the first spec's kernel: "a" (5 of 10 used, 58 of 116
    // left) is carried into it before it goes.
    store.take('b', [spec(116)], 1)
    // 58 of 116 left is 10 of 20: the state survived, nothing was reset.
    expect(store.get('a', [spec(20)])[0]?.remaining).toBe(10)
  })
})
