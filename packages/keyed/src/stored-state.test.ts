import { ManualClock } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { keyedLimiter } from './keyed-limiter'
import { compilePolicy, concurrencyPolicy } from './policy'
import type { Store, TakeResult } from './store'
import { recordPolicy, type StoredPolicy, type StoredRecord, StoredState } from './stored-state'
import { runStoreContract } from './testing/store-contract'
import { runStoreModel } from './testing/store-model'

/** The smallest store on StoredState: records in a Map, as structured clones. */
function recordStore(clock: ManualClock): Omit<Store, 'take'> & {
  readonly records: Map<string, StoredRecord>
  take(...args: Parameters<Store['take']>): TakeResult
} {
  const records = new Map<string, StoredRecord>()
  const name = (key: string, id: string) => `${key}\u0000${id}`
  const state = (key: string, policies: readonly StoredPolicy[]) =>
    new StoredState(
      policies,
      policies.map((p) => structuredClone(records.get(name(key, recordPolicy(p))))),
      clock.now(),
    )
  const save = (key: string, policies: readonly StoredPolicy[], s: StoredState) => {
    for (const { index, record } of s.changes()) {
      const at = name(key, recordPolicy(policies[index]!))
      if (record === undefined) records.delete(at)
      else records.set(at, structuredClone(record))
    }
  }
  const withPolicies = <R extends object>(results: readonly R[], policies: readonly object[]) =>
    results.map((r, i) => ({
      ...r,
      policy: policies[i],
      limit: (policies[i] as { limit: number }).limit,
    }))
  return {
    carries: true,
    records,
    take(key, policies, cost) {
      const s = state(key, policies)
      const taken = s.take(cost, 60_000)
      save(key, policies, s)
      return { allowed: taken.allowed, results: withPolicies(taken.results, policies) as never }
    },
    refund(key, policies, cost, receipts) {
      const s = state(key, policies)
      s.refund(cost, receipts)
      save(key, policies, s)
    },
    force(key, policies, cost) {
      const s = state(key, policies)
      const after = s.force(cost)
      save(key, policies, s)
      return withPolicies(after, policies) as never
    },
    block(key, policies, ms) {
      const s = state(key, policies)
      s.block(ms)
      save(key, policies, s)
    },
    release(key, policy, lease) {
      const s = state(key, [policy])
      s.release(0, lease.id)
      save(key, [policy], s)
    },
    get(key, policies) {
      // A warm-up key's age starts at first sight, a read included: its record is kept.
      const s = state(key, policies)
      const results = s.get()
      save(key, policies, s)
      return withPolicies(results, policies) as never
    },
    reset(key, policies) {
      for (const at of [...records.keys()]) {
        const [k, id] = at.split('\u0000')
        if (k === key && (policies === undefined || policies.some((p) => recordPolicy(p) === id))) {
          records.delete(at)
        }
      }
    },
    resetAll: () => records.clear(),
  }
}

const clock = new ManualClock(1_800_000_000_000)
runStoreContract('a store on StoredState (records in a Map)', () => recordStore(clock), {
  clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) },
  carries: true,
})
runStoreModel('a store on StoredState (records in a Map)', () => recordStore(clock), {
  clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) },
  leaseTtlMs: 60_000,
  runs: 200,
})

describe('StoredState', () => {
  it('writes only what changed, and deletes what is fresh again', () => {
    const clock = new ManualClock(0)
    const store = recordStore(clock)
    const p = compilePolicy({ algorithm: 'fixed-window', limit: 1, window: '1s' }, 'test')
    store.take('k', [p], 1)
    expect([...store.records.values()]).toEqual([
      {
        v: 3,
        state: [0, 1],
        f: 'fixed-window:1:1000',
        spec: { algorithm: 'fixed-window', limit: 1, window: 1000 },
      },
    ])
    // A refusal changes nothing: nothing is written (the record is the same object).
    const before = store.records.get(`k\u0000${p.id}`)
    store.take('k', [p], 1)
    expect(store.records.get(`k\u0000${p.id}`)).toBe(before)
    clock.advance(1_000)
    store.refund('k', [p], 1)
    // Past its window the state is fresh: the record goes.
    store.take('k', [p], 1)
    store.refund('k', [p], 1, [1])
    expect(store.records.size).toBe(0)
  })

  it('admits a retried take once per lease id: one slot held, permits counted once', () => {
    const clock = new ManualClock(0)
    const records = new Map<string, StoredRecord>()
    const slots = concurrencyPolicy('slots', 1)
    const rate = compilePolicy({ algorithm: 'fixed-window', limit: 3, window: '1s' }, 'test')
    const policies = [rate, slots]
    const take = (lease: string) => {
      const state = new StoredState(
        policies,
        policies.map((p) => structuredClone(records.get(p.id))),
        clock.now(),
      )
      const taken = state.take(1, 60_000, lease)
      for (const { index, record } of state.changes()) {
        if (record === undefined) records.delete(policies[index]!.id)
        else records.set(policies[index]!.id, structuredClone(record))
      }
      return taken
    }
    const answer = (resetMs: number) => ({
      allowed: true,
      results: [
        { allowed: true, remaining: 2, resetMs, retryAfterMs: 0, receipt: 0 },
        {
          allowed: true,
          remaining: 0,
          resetMs: 0,
          retryAfterMs: 0,
          lease: { id: 'a', permits: 1 },
        },
      ],
    })
    expect(take('a')).toEqual(answer(1_000))
    // The same take again (its answer was lost): the same answer, nothing more taken.
    clock.advance(40)
    expect(take('a')).toEqual(answer(960))
    // Another take is another lease: the one slot is held.
    expect(take('b').allowed).toBe(false)
  })

  it('drops expired leases: a holder that died frees its slot after leaseTtl', () => {
    const clock = new ManualClock(0)
    const store = recordStore(clock)
    const slots = concurrencyPolicy('slots', 1)
    expect(store.take('k', [slots], 1).allowed).toBe(true)
    clock.advance(59_999)
    expect(store.take('k', [slots], 1).allowed).toBe(false)
    clock.advance(1)
    expect(store.take('k', [slots], 1).allowed).toBe(true)
  })
})

describe('StoredState: a record written under another spec of its name', () => {
  it.each([
    // mode, then left of 20 after 5 of 10 were used at 30 s
    ['proportional', 10],
    ['as-is', 5],
    ['additive', 15],
    ['reset', 20],
  ] as const)('%s: is carried over on its next load, once (%d left)', async (carry, left) => {
    const clock = new ManualClock(1_800_000_000_000)
    const store = recordStore(clock)
    const limiter = keyedLimiter({
      name: 'api',
      algorithm: 'fixed-window',
      limit: 10,
      window: '1m',
      store,
    })
    await limiter.consume('k', 5)
    const [written] = [...store.records.values()] as { f?: string }[]
    expect(written?.f).toBe('fixed-window:10:60000')
    clock.advance(30_000)
    limiter.reconfigure({ algorithm: 'fixed-window', limit: 20, window: '1m' }, { carry })
    expect((await limiter.get('k')).remaining).toBe(left)
    // The record now names the new spec: the next load converts nothing.
    const next = [...store.records.values()] as { f?: string }[]
    if (carry !== 'reset') expect(next[0]?.f).toBe('fixed-window:20:60000')
    expect((await limiter.consume('k')).remaining).toBe(left - 1)
    expect((await limiter.get('k')).remaining).toBe(left - 1)
  })

  it('reads a record without a fingerprint (an earlier version wrote it) as the current spec', () => {
    const policy = compilePolicy(
      { name: 'api', algorithm: 'fixed-window', limit: 10, window: '1m' },
      't',
    )
    const first = new StoredState([policy], [undefined], 0)
    first.take(4, 60_000)
    const { record } = first.changes()[0]!
    const { f: _, spec: __, ...old } = record as { f?: string; spec?: unknown }
    const bigger = compilePolicy(
      { name: 'api', algorithm: 'fixed-window', limit: 20, window: '1m' },
      't',
    )
    expect(new StoredState([bigger], [old as StoredRecord], 0).get()[0]?.remaining).toBe(16)
    expect(new StoredState([bigger], [record], 0).get()[0]?.remaining).toBe(12)
    expect(recordPolicy(bigger)).toBe('api|fixed-window')
  })
})
