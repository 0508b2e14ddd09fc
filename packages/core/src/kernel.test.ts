import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { normalizeSpec, rateKernel } from './algorithms'
import type { Quota } from './kernel'
import type { LimiterSpec } from './types'

// Every kernel's answers agree with one another, whatever state traffic leaves: what fits
// is what takes, `available` is the most that fits, a report's `resetMs` is the wait for
// one more permit, and its `retryAfterMs` the wait for the cost. The shortcuts a kernel
// takes on its hot path (GCRA's next permit from the slack's remainder) are held to the
// definitions here.
const specs: fc.Arbitrary<LimiterSpec> = fc.oneof(
  fc.record({
    algorithm: fc.constant('token-bucket' as const),
    limit: fc.constantFrom(1, 3, 7, 100, 1e9, 1e10),
    window: fc.constantFrom(1, 100, 1000, 86_400_000),
    capacity: fc.constantFrom(1, 2, 5, 50),
  }),
  fc.record({
    algorithm: fc.constant('leaky-bucket' as const),
    limit: fc.constantFrom(1, 3, 7, 1e6),
    window: fc.constantFrom(1, 100, 1000),
  }),
  fc.record({
    algorithm: fc.constant('warm-up' as const),
    limit: fc.constantFrom(3, 7, 12, 1e9),
    window: fc.constantFrom(100, 1000, 3_600_000),
    capacity: fc.constantFrom(1, 2, 3, 12),
    warmUp: fc.constantFrom(0, 1000, 60_000),
  }),
  fc.record({
    algorithm: fc.constant('sliding-window' as const),
    limit: fc.constantFrom(1, 3, 6, 300, 1e10),
    window: fc.constantFrom(10, 1000, 3000),
    slots: fc.integer({ min: 1, max: 6 }),
  }),
  fc.record({
    algorithm: fc.constant('fixed-window' as const),
    limit: fc.constantFrom(1, 3, 6, 1e10),
    window: fc.constantFrom(7, 1000, 3000),
  }),
)

const ops = fc.array(
  fc.record({
    op: fc.constantFrom('take', 'take', 'force', 'refund', 'advance'),
    n: fc.integer({ min: 1, max: 60 }),
    share: fc.double({ min: 0, max: 1.5, noNaN: true }),
    dt: fc.oneof(fc.integer({ min: 0, max: 3000 }), fc.constantFrom(0.001, 0.5, 14.286)),
  }),
  { minLength: 1, maxLength: 50 },
)

describe('every kernel agrees with itself', () => {
  it('fits ⇔ take passes ⇔ wait is 0; available is the most that fits; reports are the waits', () => {
    fc.assert(
      fc.property(specs, ops, (spec, steps) => {
        const kernel = rateKernel(normalizeSpec(spec) as never)
        kernel.resize(1)
        let now = 1_000_000
        kernel.clear(0, now)
        const quota: Quota = { available: 0, resetMs: 0, retryAfterMs: 0, receipt: 0 }
        for (const { op, n, share, dt } of steps) {
          const cost = Math.max(1, Math.floor(kernel.capacity * share)) || n
          if (op === 'advance') now += dt
          else if (op === 'force') kernel.force(0, now, n)
          else if (op === 'refund') kernel.refund(0, now, n)
          const available = kernel.available(0, now)
          if (available > 0) expect(kernel.fits(0, now, available)).toBe(true)
          if (available < kernel.capacity) expect(kernel.fits(0, now, available + 1)).toBe(false)
          expect(kernel.fits(0, now, cost)).toBe(kernel.wait(0, now, cost) === 0)
          kernel.quota(0, now, cost, false, quota)
          expect(quota.available).toBe(available)
          expect(quota.resetMs).toBe(
            available < kernel.capacity ? kernel.wait(0, now, available + 1) : 0,
          )
          expect(quota.retryAfterMs).toBe(kernel.wait(0, now, cost))
          if (op === 'take') {
            const fits = kernel.fits(0, now, cost)
            expect(kernel.take(0, now, cost, quota)).toBe(fits)
            expect(quota.available).toBe(kernel.available(0, now))
          }
          // Waiting exactly as long as told makes it fit, and a microsecond less does not.
          const wait = kernel.wait(0, now, cost)
          if (wait > 0 && Number.isFinite(wait)) {
            expect(kernel.fits(0, now + wait, cost)).toBe(true)
            expect(kernel.fits(0, now + wait - 0.001, cost)).toBe(false)
          }
        }
      }),
      { numRuns: 500 },
    )
  })
})
