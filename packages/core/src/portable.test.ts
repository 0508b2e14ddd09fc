import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ManualClock } from './clock'
import { isCompact, isPortable } from './compact'
import { createLimiter } from './create-limiter'
import type { LimiterSpec, PortableRateLimiter } from './types'

const specs: LimiterSpec[] = [
  { algorithm: 'token-bucket', limit: 3, window: 1_000, capacity: 5 },
  { algorithm: 'leaky-bucket', limit: 7, window: 100 },
  { algorithm: 'fixed-window', limit: 4, window: 1_000 },
  { algorithm: 'sliding-window', limit: 5, window: 1_000, slots: 4 },
  { algorithm: 'warm-up', limit: 6, window: 1_000, warmUp: 3_000 },
]

type Step = { advance: number } | { take: number } | { refund: number }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ advance: fc.integer({ min: 0, max: 700 }) }),
  fc.record({ take: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ refund: fc.integer({ min: 1, max: 2 }) }),
)

function apply(limiter: PortableRateLimiter, clock: ManualClock, s: Step): unknown {
  if ('advance' in s) {
    clock.advance(s.advance)
    return undefined
  }
  if ('refund' in s) {
    limiter.refund(s.refund)
    return undefined
  }
  return [
    limiter.tryAcquire(s.take),
    limiter.availablePermits(),
    limiter.retryAfterMs(1),
    limiter.resetMs(),
  ]
}

describe('portable state (exportState / importState)', () => {
  it('every time-based limiter is portable; the concurrency limiter is not', () => {
    for (const spec of specs) expect(isPortable(createLimiter(spec))).toBe(true)
    expect(isPortable(createLimiter({ algorithm: 'concurrency', max: 1 }))).toBe(false)
  })

  it.each(specs.map((spec) => [spec.algorithm, spec] as const))(
    '%s: a twin that imports the state decides exactly as the original from then on',
    (_name, spec) => {
      fc.assert(
        fc.property(
          fc.array(step, { maxLength: 30 }),
          fc.array(step, { maxLength: 30 }),
          (before, after) => {
            const clock = new ManualClock(1_000_000)
            const original = createLimiter(spec, clock) as PortableRateLimiter
            for (const s of before) apply(original, clock, s)
            const twin = createLimiter(spec, clock) as PortableRateLimiter
            twin.importState(original.exportState())
            for (const s of after) {
              if ('advance' in s) {
                clock.advance(s.advance)
                continue
              }
              expect(apply(twin, clock, s)).toEqual(apply(original, clock, s))
            }
            expect(twin.exportState()).toEqual(original.exportState())
          },
        ),
      )
    },
  )

  it('a fresh state survives a structured clone (it holds -Infinity)', () => {
    for (const spec of specs) {
      const clock = new ManualClock()
      const limiter = createLimiter(spec, clock) as PortableRateLimiter
      const twin = createLimiter(spec, clock) as PortableRateLimiter
      twin.importState(structuredClone(limiter.exportState()))
      expect(twin.availablePermits()).toBe(limiter.availablePermits())
    }
  })

  it('the compact limiters export what saveState keeps', () => {
    const clock = new ManualClock()
    const limiter = createLimiter(specs[2]!, clock)
    if (!isCompact(limiter) || !isPortable(limiter)) throw new Error('fixed window is both')
    limiter.tryAcquire(2)
    clock.advance(1_500)
    limiter.tryAcquire(1)
    expect(limiter.exportState()).toEqual([1, 1])
  })
})
