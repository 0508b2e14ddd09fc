import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { normalizeSpec } from './algorithms'
import { ManualClock } from './clock'
import { createLimiter } from './create-limiter'
import type { Quota } from './kernel'
import { keyedLimiter } from './keyed'
import { countArray } from './sliding-window/sliding-window'
import type { NormalizedRateSpec, RateLimiter, RateLimiterSpec } from './types'

const SPECS: readonly RateLimiterSpec[] = [
  { algorithm: 'token-bucket', limit: 3, window: 1000, capacity: 5 },
  { algorithm: 'token-bucket', limit: 7, window: 100 },
  { algorithm: 'leaky-bucket', limit: 4, window: 1000 },
  { algorithm: 'sliding-window', limit: 5, window: 1000, slots: 4 },
  { algorithm: 'sliding-window', limit: 300, window: 60_000, slots: 10 },
  { algorithm: 'fixed-window', limit: 4, window: 1000 },
  { algorithm: 'warm-up', limit: 6, window: 1000, warmUp: 3000 },
  { algorithm: 'warm-up', limit: 2, window: 500, capacity: 1, warmUp: 2000 },
]

/** One step of a key's traffic. */
type Step =
  | { kind: 'wait'; ms: number }
  | { kind: 'take'; key: number; permits: number }
  | { kind: 'refund'; key: number; permits: number; receipt: boolean }

const step = (keys: number, largest: number): fc.Arbitrary<Step> =>
  fc.oneof(
    fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 700 }) }),
    fc.record({
      kind: fc.constant('take' as const),
      key: fc.nat(keys - 1),
      permits: fc.integer({ min: 1, max: largest + 1 }),
    }),
    fc.record({
      kind: fc.constant('refund' as const),
      key: fc.nat(keys - 1),
      permits: fc.integer({ min: 1, max: largest }),
      receipt: fc.boolean(),
    }),
  )

const blankQuota = (): Quota => ({ available: 0, resetMs: 0, retryAfterMs: 0, receipt: 0 })

/** What a store used to read from a limiter of its own after a decision. */
function quotaOf(limiter: RateLimiter, permits: number, allowed: boolean): Quota {
  const available = Math.max(0, limiter.availablePermits())
  const more = limiter.retryAfterMs(available + 1)
  return {
    available,
    resetMs: Number.isFinite(more) ? more : 0,
    retryAfterMs: allowed ? 0 : limiter.retryAfterMs(permits),
    receipt: limiter.receipt(),
  }
}

describe('keyedLimiter', () => {
  it.each(SPECS)(
    'decides for each key exactly as a limiter of its own: $algorithm $limit',
    (spec) => {
      const normalized = normalizeSpec(spec) as NormalizedRateSpec
      const largest = 'capacity' in normalized ? normalized.capacity : normalized.limit
      fc.assert(
        fc.property(fc.array(step(6, largest), { maxLength: 120 }), (steps) => {
          const clock = new ManualClock(10_000)
          const kernel = keyedLimiter(normalized)
          // Rows grow while keys arrive, as a store's do: the slabs are copied under them.
          kernel.resize(2)
          const limiters: RateLimiter[] = []
          const receipts: (number | undefined)[] = []
          const rowOf = (key: number) => {
            if (limiters[key] === undefined) {
              if (key >= kernel.rows) kernel.resize(key + 1)
              kernel.clear(key, clock.now())
              limiters[key] = createLimiter(spec, clock)
            }
            return key
          }
          for (const s of steps) {
            if (s.kind === 'wait') {
              clock.advance(s.ms)
              continue
            }
            const row = rowOf(s.key)
            const twin = limiters[s.key]!
            const now = clock.now()
            if (s.kind === 'take') {
              const quota = blankQuota()
              const allowed = kernel.decide(row, s.permits, now, quota)
              const expected = twin.tryAcquire(s.permits)
              expect(allowed).toBe(expected)
              const want = quotaOf(twin, s.permits, expected)
              expect(quota.available).toBe(want.available)
              expect(quota.resetMs).toBe(want.resetMs)
              expect(quota.retryAfterMs).toBe(want.retryAfterMs)
              if (allowed) {
                expect(quota.receipt).toBe(want.receipt)
                receipts[s.key] = quota.receipt
              }
            } else {
              const receipt = s.receipt ? receipts[s.key] : undefined
              kernel.refund(row, s.permits, receipt, now)
              twin.refund(s.permits, receipt)
            }
            expect(kernel.available(row, now)).toBe(twin.availablePermits())
            const isFresh = twin.resetMs() === 0
            if (!kernel.ageless) expect(kernel.isFresh(row, now)).toBe(isFresh)
          }
        }),
        { numRuns: 150 },
      )
    },
  )

  it('answers for a key with no row (-1) as a fresh limiter does, writing nothing', () => {
    const clock = new ManualClock(5000)
    for (const spec of SPECS) {
      const kernel = keyedLimiter(normalizeSpec(spec) as NormalizedRateSpec)
      const twin = createLimiter(spec, clock)
      kernel.resize(1)
      kernel.clear(0, clock.now())
      kernel.take(0, 1, clock.now())
      const quota = blankQuota()
      kernel.quota(-1, 2, false, clock.now(), quota)
      const want = quotaOf(twin, 2, false)
      expect([quota.available, quota.resetMs, quota.retryAfterMs]).toEqual([
        want.available,
        want.resetMs,
        want.retryAfterMs,
      ])
      expect(kernel.available(-1, clock.now())).toBe(twin.availablePermits())
      if (!kernel.ageless) expect(kernel.freshPermits).toBe(twin.availablePermits())
      // Row 0 kept its permit.
      expect(kernel.available(0, clock.now())).toBeLessThan(twin.availablePermits())
    }
  })

  it('keeps a sliding window ring in the narrowest integers that hold its limit', () => {
    expect(countArray(255, 3)).toBeInstanceOf(Uint8Array)
    expect(countArray(256, 3)).toBeInstanceOf(Uint16Array)
    expect(countArray(65_535, 3)).toBeInstanceOf(Uint16Array)
    expect(countArray(65_536, 3)).toBeInstanceOf(Uint32Array)
    expect(countArray(2 ** 32, 3)).toBeInstanceOf(Float64Array)
  })

  it('fills a ring to a limit of 255 in bytes without wrapping, across slots and keys', () => {
    const clock = new ManualClock()
    const kernel = keyedLimiter({ algorithm: 'sliding-window', limit: 255, window: 1000, slots: 5 })
    kernel.resize(3)
    for (let row = 0; row < 3; row++) kernel.clear(row, 0)
    for (let i = 0; i < 255; i++) {
      clock.set(i * 3)
      for (let row = 0; row < 3; row++) expect(kernel.take(row, 1, clock.now())).toBe(true)
    }
    for (let row = 0; row < 3; row++) {
      expect(kernel.take(row, 1, clock.now())).toBe(false)
      expect(kernel.available(row, clock.now())).toBe(0)
    }
    // The first slot (0–200 ms) leaves the window at 1200 ms: its 67 permits come back.
    clock.set(1200)
    expect(kernel.available(0, clock.now())).toBe(67)
  })

  it('starts a warm-up key cold when its row is cleared, whatever the row held before', () => {
    const clock = new ManualClock()
    const spec = { algorithm: 'warm-up', limit: 3, window: 1000, warmUp: 10_000 } as const
    const kernel = keyedLimiter(normalizeSpec(spec) as NormalizedRateSpec)
    kernel.resize(1)
    kernel.clear(0, 0)
    clock.set(60_000)
    expect(kernel.available(0, clock.now())).toBe(3) // warm: the full capacity
    kernel.clear(0, clock.now())
    expect(kernel.available(0, clock.now())).toBe(1) // cold again: a third
    expect(kernel.isFresh(0, clock.now())).toBe(false)
  })
})
