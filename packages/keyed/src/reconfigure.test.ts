import { type Carry, ManualClock } from '@sluice/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { keyedLimiter } from './keyed-limiter'
import { memoryStore } from './memory-store'

// Guava-style tables: each row is one carry mode and the numbers a caller sees after a
// keyed limiter (on a memory store) is reconfigured under it. The kernels' own carry
// tables are in @sluice/core's carry.test.ts and reconfigure.test.ts; these prove the
// store carries each key over on its next touch, once, with the limiter's carry mode.

describe('keyedLimiter.reconfigure on a memory store', () => {
  describe('token bucket: existing debt stays owed (Guava: 2 per second, acquire(10), then 1 per second)', () => {
    it.each([
      // mode, wait for the next permit at 0, refused at 5999, admitted at. At 2 per
      // second the 20 permits taken are paid off at 20 · 500 ms − the capacity's
      // 10 · 500 ms = 5 s, in every mode but reset; then 1 per second: 5 s + 1 s = 6 s.
      ['proportional', 6000, 6000],
      ['as-is', 6000, 6000],
      ['additive', 6000, 6000],
      ['reset', 0, 0],
    ] as const)('%s: the next caller waits %d ms', (carry, wait, admittedAt) => {
      const clock = new ManualClock()
      const limiter = keyedLimiter({
        name: 'api',
        algorithm: 'token-bucket',
        limit: 2,
        capacity: 10,
        window: '1s',
        clock,
      })
      expect(limiter.consume('k', 10).allowed).toBe(true)
      limiter.penalty('k', 10) // acquire(10) ahead: paid off at 5 s at 2 per second
      expect(limiter.get('k').retryAfterMs).toBe(5500)
      limiter.reconfigure(
        { algorithm: 'token-bucket', limit: 1, capacity: 10, window: '1s' },
        { carry },
      )
      expect(limiter.get('k').retryAfterMs).toBe(wait)
      if (admittedAt > 0) {
        clock.advance(admittedAt - 1)
        expect(limiter.consume('k').allowed).toBe(false)
        clock.advance(1)
      }
      expect(limiter.consume('k').allowed).toBe(true)
    })
  })

  describe('idle credit never exceeds the new capacity', () => {
    it.each(['proportional', 'as-is', 'additive', 'reset'] as const)(
      '%s: a full bucket of 10 cut to 4 holds 4, and still 4 after an idle hour',
      (carry) => {
        const clock = new ManualClock()
        const limiter = keyedLimiter({
          name: 'api',
          algorithm: 'token-bucket',
          limit: 10,
          window: '1m',
          clock,
        })
        limiter.penalty('k', 1)
        clock.advance(60_000) // full again
        limiter.reconfigure({ algorithm: 'token-bucket', limit: 4, window: '1m' }, { carry })
        expect(limiter.get('k').remaining).toBe(4)
        clock.advance(3_600_000)
        expect(limiter.get('k').remaining).toBe(4)
        expect(limiter.consume('k', 4).allowed).toBe(true)
        expect(limiter.consume('k').allowed).toBe(false)
      },
    )
  })

  describe('an awkward ratio, 3 → 7, with 2 of 3 available (proportional: ⌊2·7/3⌋ = 4)', () => {
    it.each([
      // mode, then available after the change for each algorithm
      ['proportional', { 'token-bucket': 4, 'fixed-window': 4, 'sliding-window': 4 }],
      ['as-is', { 'token-bucket': 2, 'fixed-window': 2, 'sliding-window': 2 }],
      ['additive', { 'token-bucket': 6, 'fixed-window': 6, 'sliding-window': 6 }],
      ['reset', { 'token-bucket': 7, 'fixed-window': 7, 'sliding-window': 7 }],
    ] as const)('%s: %j', (carry, expected) => {
      for (const algorithm of ['token-bucket', 'fixed-window', 'sliding-window'] as const) {
        const clock = new ManualClock()
        const limiter = keyedLimiter({ name: 'api', algorithm, limit: 3, window: '1m', clock })
        limiter.consume('k')
        limiter.reconfigure({ algorithm, limit: 7, window: '1m' }, { carry })
        const after = limiter.get('k').remaining
        expect([algorithm, after]).toEqual([algorithm, expected[algorithm]])
        // Exactly that many more are admitted, then none.
        expect(limiter.consume('k', after).allowed).toBe(true)
        expect(limiter.consume('k').allowed).toBe(false)
      }
    })
  })

  describe('a window half used: 5 of 10 at 30 s, then 20 per minute', () => {
    it.each([
      // mode, available, fixed window's reset (ms), sliding window's reset (ms)
      ['proportional', 10, 30_000, 36_000],
      ['as-is', 5, 30_000, 36_000],
      ['additive', 15, 30_000, 36_000],
      ['reset', 20, 0, 0],
    ] as const)('%s: %d available', (carry, available, fixedReset, slidingReset) => {
      for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
        const clock = new ManualClock()
        const limiter = keyedLimiter({ name: 'api', algorithm, limit: 10, window: '1m', clock })
        limiter.consume('k', 5)
        clock.advance(30_000)
        limiter.reconfigure({ algorithm, limit: 20, window: '1m' }, { carry })
        const state = limiter.get('k')
        expect([algorithm, state.remaining, state.resetMs]).toEqual([
          algorithm,
          available,
          algorithm === 'fixed-window' ? fixedReset : slidingReset,
        ])
      }
    })
  })

  describe('leaky bucket: a permit taken at 3 per minute, then 6 per minute', () => {
    it.each([
      ['proportional', 10_000],
      ['as-is', 10_000],
      ['additive', 10_000],
      ['reset', 0],
    ] as const)(
      '%s: the next permit is %d ms away (the new pace from the permit taken)',
      (carry, wait) => {
        const clock = new ManualClock()
        const limiter = keyedLimiter({
          name: 'api',
          algorithm: 'leaky-bucket',
          limit: 3,
          window: '1m',
          clock,
        })
        limiter.consume('k')
        expect(limiter.get('k').retryAfterMs).toBe(20_000)
        limiter.reconfigure({ algorithm: 'leaky-bucket', limit: 6, window: '1m' }, { carry })
        expect(limiter.get('k').retryAfterMs).toBe(wait)
      },
    )
  })

  it('converts each key once, on its next touch, and leaves untouched keys as they were written', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({
      name: 'api',
      algorithm: 'fixed-window',
      limit: 10,
      window: '1m',
      clock,
    })
    limiter.consume('a', 5)
    limiter.consume('b', 5)
    limiter.reconfigure({ algorithm: 'fixed-window', limit: 20, window: '1m' })
    expect(limiter.get('a').remaining).toBe(10)
    // Converting twice is converting once.
    expect(limiter.get('a').remaining).toBe(10)
    limiter.reconfigure({ algorithm: 'fixed-window', limit: 20, window: '1m' })
    expect(limiter.get('a').remaining).toBe(10)
    // Back to 10 before "b" was touched: "b" was never converted, "a" scales back.
    limiter.reconfigure({ algorithm: 'fixed-window', limit: 10, window: '1m' })
    expect(limiter.get('b').remaining).toBe(5)
    expect(limiter.get('a').remaining).toBe(5)
  })

  it('an unnamed policy keeps its name, so its state carries', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({ limit: 10, window: '1m', clock })
    expect(limiter.name).toBe('10-per-1m')
    limiter.consume('k', 10)
    limiter.reconfigure({ limit: 20, window: '1m' })
    expect(limiter.name).toBe('10-per-1m')
    expect(limiter.policies[0]?.limit).toBe(20)
    expect(limiter.get('k').remaining).toBe(0)
  })

  it('carries each of several policies by name; a refund after the change credits the new spec', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({
      policies: [
        { name: 'requests', algorithm: 'fixed-window', limit: 10, window: '1m' },
        { name: 'tokens', algorithm: 'token-bucket', limit: 1000, window: '1m' },
      ],
      clock,
    })
    const taken = limiter.consume('k', { requests: 5, tokens: 500 })
    limiter.reconfigure({
      policies: [
        { name: 'tokens', algorithm: 'token-bucket', limit: 2000, window: '1m' },
        { name: 'requests', algorithm: 'fixed-window', limit: 20, window: '1m' },
      ],
    })
    expect(limiter.get('k').policies.map((p) => [p.policy, p.remaining])).toEqual([
      ['tokens', 1000],
      ['requests', 10],
    ])
    limiter.refund(taken.receipt!)
    expect(limiter.get('k').policies.map((p) => [p.policy, p.remaining])).toEqual([
      ['tokens', 1500],
      ['requests', 15],
    ])
  })

  it('bulkhead: lowering max below what is held refuses newcomers until enough release, revoking none', () => {
    const limiter = keyedLimiter({ name: 'pool', max: 3 })
    const held = [limiter.enter('k'), limiter.enter('k'), limiter.enter('k')]
    expect(held.every((permit) => permit !== undefined)).toBe(true)
    limiter.reconfigure({ max: 1 })
    expect(limiter.enter('k')).toBeUndefined()
    held[0]!.release()
    expect(limiter.enter('k')).toBeUndefined()
    held[1]!.release()
    expect(limiter.enter('k')).toBeUndefined() // one held, max 1
    held[2]!.release()
    const next = limiter.enter('k')
    expect(next).toBeDefined()
    limiter.reconfigure({ max: 3 })
    expect(limiter.enter('k')).toBeDefined()
    expect(limiter.enter('k')).toBeDefined()
    expect(limiter.enter('k')).toBeUndefined()
  })

  describe('bad input is refused, and the old spec keeps working', () => {
    const cases: [string, () => void, RegExp][] = []
    const clock = new ManualClock()
    const limiter = keyedLimiter({
      name: 'api',
      algorithm: 'fixed-window',
      limit: 3,
      window: '1m',
      clock,
    })
    cases.push(
      [
        'another algorithm',
        () => limiter.reconfigure({ algorithm: 'token-bucket', limit: 5, window: '1m' }),
        /^keyedLimiter\.reconfigure: "algorithm" must stay 'fixed-window' for policy "api" .*got 'token-bucket'$/,
      ],
      [
        'a spec that fails validation',
        () => limiter.reconfigure({ algorithm: 'fixed-window', limit: 0, window: '1m' }),
        /^keyedLimiter\.reconfigure: "limit" must be a positive integer, got 0$/,
      ],
      [
        'a misspelt carry',
        () =>
          limiter.reconfigure(
            { algorithm: 'fixed-window', limit: 5 },
            { carry: 'proportionally' as Carry },
          ),
        /"carry" must be one of 'proportional', 'as-is', 'reset', 'additive' \(did you mean 'proportional'\?\), got "proportionally"/,
      ],
      [
        'a misspelt option',
        () => limiter.reconfigure({ algorithm: 'fixed-window', limt: 5 } as never),
        /^keyedLimiter\.reconfigure: unknown option "limt" \(did you mean "limit"\?\)/,
      ],
      [
        'a store',
        () => limiter.reconfigure({ limit: 5, store: memoryStore() } as never),
        /^keyedLimiter\.reconfigure: unknown option "store"/,
      ],
      [
        'a bulkhead size',
        () => limiter.reconfigure({ max: 5 }),
        /^keyedLimiter\.reconfigure: a rate limiter takes no "max"/,
      ],
    )
    it.each(cases)('%s', (_, call, message) => {
      const before = limiter.get('k').remaining
      expect(call).toThrow(message)
      expect(limiter.policies[0]?.limit).toBe(3)
      // Still 3 per minute: one more permit counts against the old limit.
      if (before > 0) {
        expect(limiter.consume('k').remaining).toBe(before - 1)
      } else {
        expect(limiter.consume('k').allowed).toBe(false)
      }
    })
  })

  it('refuses a name reused for another algorithm on one store, at construction', () => {
    const store = memoryStore()
    keyedLimiter({ name: 'api', algorithm: 'fixed-window', limit: 3, store })
    expect(() => keyedLimiter({ name: 'api', algorithm: 'token-bucket', limit: 3, store })).toThrow(
      /shares its name with policy "api" \(fixed-window 3 per 1m\) of an earlier keyedLimiter on the same store, of another algorithm/,
    )
    // Another spec of the same algorithm is a reconfiguration, not a conflict.
    expect(() =>
      keyedLimiter({ name: 'api', algorithm: 'fixed-window', limit: 9, store }),
    ).not.toThrow()
  })

  describe('specs flipping on one store (a rolling deploy in one process)', () => {
    it.each(['proportional', 'as-is', 'additive'] as const)(
      '%s: never resets a key, never admits more in a window than the larger limit',
      (carry) => {
        fc.assert(
          fc.property(
            fc.array(
              fc.record({
                spec: fc.constantFrom(0, 1),
                cost: fc.integer({ min: 1, max: 4 }),
                advance: fc.integer({ min: 0, max: 20_000 }),
              }),
              { minLength: 1, maxLength: 80 },
            ),
            (steps) => {
              const clock = new ManualClock()
              const store = memoryStore({ clock })
              const limits = [10, 25]
              const processes = limits.map((limit) =>
                keyedLimiter({
                  name: 'api',
                  algorithm: 'fixed-window',
                  limit,
                  window: '1m',
                  store,
                }),
              )
              // The carry mode is the one the new spec was rolled out with.
              for (const [i, limit] of limits.entries()) {
                processes[i]!.reconfigure(
                  { algorithm: 'fixed-window', limit, window: '1m' },
                  { carry },
                )
              }
              const admitted = new Map<number, number>()
              for (const step of steps) {
                clock.advance(step.advance)
                const window = Math.floor(clock.now() / 60_000)
                if (processes[step.spec]!.consume('k', step.cost).allowed) {
                  admitted.set(window, (admitted.get(window) ?? 0) + step.cost)
                }
              }
              for (const count of admitted.values()) expect(count).toBeLessThanOrEqual(25)
            },
          ),
          { numRuns: 200 },
        )
      },
    )
  })
})

describe('on a store that keeps each spec apart (no `carries`)', () => {
  /** A memory store that says it cannot carry, as a per-spec remote store does. */
  const perSpec = () => {
    const store = memoryStore()
    Object.defineProperty(store, 'carries', { value: false })
    return store
  }

  it('refuses reconfigure (it would reset every key), the old spec left working', () => {
    const limiter = keyedLimiter({ name: 'api', limit: 2, store: perSpec() })
    expect(() => limiter.reconfigure({ limit: 5 })).toThrow(
      /^keyedLimiter\.reconfigure: this store keeps each spec's state apart .* reconfiguring would start every key afresh/,
    )
    expect(limiter.policies[0]?.limit).toBe(2)
  })

  it('still refuses one name for two specs at construction', () => {
    const store = perSpec()
    keyedLimiter({ name: 'api', limit: 2, store })
    expect(() => keyedLimiter({ name: 'api', limit: 5, store })).toThrow(
      /shares its name with policy "api" \(sliding-window 2 per 1m\) of an earlier keyedLimiter on the same store; give one of them another name \(this store keeps each spec's state apart/,
    )
  })
})
