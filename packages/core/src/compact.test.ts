import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ManualClock } from './clock'
import { isCompact } from './compact'
import { createLimiter } from './create-limiter'
import type { RateLimiterSpec } from './types'

const compactSpecs: RateLimiterSpec[] = [
  { algorithm: 'token-bucket', limit: 3, window: 1000, capacity: 5 },
  { algorithm: 'leaky-bucket', limit: 7, window: 100 },
  { algorithm: 'fixed-window', limit: 4, window: 250 },
]

describe('compact state', () => {
  it('token bucket, leaky bucket and fixed window are compact; the others are not', () => {
    const clock = new ManualClock()
    const compact = (spec: Parameters<typeof createLimiter>[0]) =>
      isCompact(createLimiter(spec, clock))
    expect(compactSpecs.map(compact)).toEqual([true, true, true])
    expect(compact({ algorithm: 'sliding-window', limit: 3 })).toBe(false)
    expect(compact({ algorithm: 'warm-up', limit: 3, warmUp: '1m' })).toBe(false)
    expect(compact({ algorithm: 'concurrency', max: 3 })).toBe(false)
  })

  it.each(compactSpecs)(
    '$algorithm: one limiter fed saved states decides exactly like one limiter per key',
    (spec) => {
      fc.assert(
        fc.property(
          fc.array(
            fc.record({
              key: fc.integer({ min: 0, max: 2 }),
              gap: fc.integer({ min: 0, max: 400 }),
              permits: fc.integer({ min: 1, max: 3 }),
              refund: fc.boolean(),
            }),
            { maxLength: 60 },
          ),
          (events) => {
            const clock = new ManualClock(1_000_000)
            const dedicated = [0, 1, 2].map(() => createLimiter(spec, clock))
            const shared = createLimiter(spec, clock)
            if (!isCompact(shared)) throw new Error('not compact')
            const states = [shared.freshState, shared.freshState, shared.freshState]
            for (const { key, gap, permits, refund } of events) {
              clock.advance(gap)
              const own = dedicated[key]!
              shared.loadState(states[key]!)
              expect(shared.availablePermits()).toBe(own.availablePermits())
              expect(shared.retryAfterMs(permits)).toBe(own.retryAfterMs(permits))
              const allowed = own.tryAcquire(permits)
              expect(shared.tryAcquire(permits)).toBe(allowed)
              if (allowed && refund) {
                own.refund(1)
                shared.refund(1)
              }
              expect(shared.resetMs()).toBe(own.resetMs())
              states[key] = shared.saveState()
            }
          },
        ),
      )
    },
  )

  it('fixed window: a count saved in an earlier window is not carried into the next', () => {
    const clock = new ManualClock()
    const window = createLimiter({ algorithm: 'fixed-window', limit: 2, window: 100 }, clock)
    if (!isCompact(window)) throw new Error('not compact')
    expect(window.tryAcquire(2)).toBe(true)
    const full = window.saveState()
    window.loadState(full)
    expect(window.tryAcquire()).toBe(false)
    clock.advance(100)
    window.loadState(full)
    expect(window.availablePermits()).toBe(2)
    expect(window.tryAcquire(2)).toBe(true)
  })
})
