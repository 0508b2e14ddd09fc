import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../clock'
import { SlidingWindowKernel } from './kernel'
import { slidingWindow } from './sliding-window'

describe('slidingWindow', () => {
  it('reports its configuration', () => {
    expect(slidingWindow({ limit: 5, window: '1m' })).toMatchObject({
      name: 'sliding-window',
      limit: 5,
      windowMs: 60_000,
    })
  })

  // limit 5 per 1000 ms in 10 slots of 100 ms. A permit taken in slot [k·100, k·100+100)
  // counts until that slot has wholly left the window: until (k + 11)·100.
  it('bounds the rolling window and expires slot by slot', () => {
    const clock = new ManualClock()
    const window = slidingWindow({ limit: 5, window: 1000, slots: 10, clock })
    const rows: [number, number, boolean, number][] = [
      [0, 3, true, 2],
      [550, 2, true, 0],
      [600, 1, false, 0],
      [999, 1, false, 0],
      [1000, 1, false, 0],
      [1099, 1, false, 0],
      [1100, 1, true, 2],
      [1100, 3, false, 2],
      [1599, 3, false, 2],
      [1600, 3, true, 1],
      [2199, 2, false, 1],
      [2200, 2, true, 0],
      [10_000, 5, true, 0],
    ]
    for (const [t, permits, admitted, available] of rows) {
      clock.set(t)
      expect([t, window.tryAcquire(permits)]).toEqual([t, admitted])
      expect([t, window.availablePermits()]).toEqual([t, available])
    }
  })

  it('has no boundary double burst', () => {
    const clock = new ManualClock(999)
    const window = slidingWindow({ limit: 5, window: 1000, clock })
    expect(window.tryAcquire(5)).toBe(true)
    clock.set(1000)
    expect(window.tryAcquire()).toBe(false)
    clock.set(1999)
    expect(window.tryAcquire()).toBe(false)
    clock.set(2000)
    expect(window.tryAcquire(5)).toBe(true)
  })

  it('retryAfterMs and resetMs say when enough old slots expire, exactly', () => {
    const clock = new ManualClock()
    const window = slidingWindow({ limit: 5, window: 1000, slots: 10, clock })
    window.tryAcquire(3)
    clock.set(550)
    window.tryAcquire(2)
    clock.set(600)
    expect([1, 3, 4, 5, 6].map((n) => window.retryAfterMs(n))).toEqual([
      500,
      500,
      1000,
      1000,
      Number.POSITIVE_INFINITY,
    ])
    expect(window.resetMs()).toBe(1000)
    clock.set(1099)
    expect(window.tryAcquire()).toBe(false)
    clock.set(1100)
    expect(window.tryAcquire(3)).toBe(true)
    expect(window.retryAfterMs()).toBe(500)
  })

  it.each([
    [7, 100, 3],
    [5, 1000, 7],
    [3, 60_000, 12],
  ])(
    'advancing by exactly retryAfterMs admits (limit %d per %d ms, %d slots)',
    (limit, ms, slots) => {
      for (const start of [0, 1.5, 987_654_321.25]) {
        const clock = new ManualClock(start)
        const window = slidingWindow({ limit, window: ms, slots, clock })
        for (let round = 0; round < 2 * slots; round++) {
          while (window.tryAcquire()) {}
          const t0 = clock.now()
          const retry = window.retryAfterMs()
          expect(retry).toBeGreaterThan(0)
          if (retry > 1) {
            clock.set(t0 + retry - 1)
            expect(window.tryAcquire()).toBe(false)
          }
          clock.set(t0 + retry)
          expect(window.tryAcquire()).toBe(true)
          clock.advance(ms / slots / 3)
        }
      }
    },
  )

  it('refund gives back the newest permits, never beyond the limit', () => {
    const clock = new ManualClock()
    const window = slidingWindow({ limit: 5, window: 1000, clock })
    window.tryAcquire(2)
    clock.set(500)
    window.tryAcquire(3)
    window.refund(2)
    expect(window.availablePermits()).toBe(2)
    // The remaining permit of t=500 now ends last; the two of t=0 expire at 1100.
    expect(window.resetMs()).toBe(1100)
    window.refund(100)
    expect(window.availablePermits()).toBe(5)
    expect(window.resetMs()).toBe(0)
  })

  it('a request for more than the limit is refused and consumes nothing', () => {
    const window = slidingWindow({ limit: 3, clock: new ManualClock() })
    expect(window.tryAcquire(4)).toBe(false)
    expect(window.retryAfterMs(4)).toBe(Number.POSITIVE_INFINITY)
    expect(window.availablePermits()).toBe(3)
  })

  it('never admits more than limit in any rolling window', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.constantFrom(100, 1000, 333),
        fc.integer({ min: 1, max: 12 }),
        fc.array(
          fc.record({
            dt: fc.double({ min: 0, max: 200, noNaN: true }),
            permits: fc.integer({ min: 1, max: 4 }),
          }),
          { maxLength: 150 },
        ),
        (limit, windowMs, slots, steps) => {
          const clock = new ManualClock()
          const window = slidingWindow({ limit, window: windowMs, slots, clock })
          const admitted: { t: number; permits: number }[] = []
          for (const { dt, permits } of steps) {
            clock.advance(dt)
            if (window.tryAcquire(permits)) admitted.push({ t: clock.now(), permits })
          }
          // Every window [t, t + windowMs) starting at an admission holds ≤ limit.
          for (let i = 0; i < admitted.length; i++) {
            let count = 0
            const from = (admitted[i] as { t: number }).t
            for (let j = i; j < admitted.length; j++) {
              const next = admitted[j] as { t: number; permits: number }
              if (next.t >= from + windowMs) break
              count += next.permits
            }
            expect(count).toBeLessThanOrEqual(limit)
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('the sliding window kernel: its wait against its state', () => {
  /** The wait, walked oldest generation first over `[head, ...ring]`, as the window defines it. */
  function reference(
    state: number[],
    slots: number,
    windowMs: number,
    ms: number,
    limit: number,
    permits: number,
  ) {
    const [head, ...ring] = state as [number, ...number[]]
    const generation = Math.max(Math.floor((ms * slots) / windowMs), head)
    const countOf = (g: number) =>
      g > head || g <= head - ring.length
        ? 0
        : ring[((g % ring.length) + ring.length) % ring.length]!
    let used = 0
    for (let g = generation - slots; g <= generation; g++) used += countOf(g)
    let excess = used + permits - limit
    if (excess <= 0) return 0
    for (let g = generation - slots; g <= generation; g++) {
      excess -= countOf(g)
      if (excess <= 0) return (g + slots + 1) * (windowMs / slots) - ms
    }
    return (generation + slots + 1) * (windowMs / slots) - ms
  }

  it('finds the same slot to wait for, whatever the traffic', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            gap: fc.integer({ min: 0, max: 400 }),
            permits: fc.integer({ min: 1, max: 4 }),
          }),
          {
            maxLength: 60,
          },
        ),
        (steps) => {
          const kernel = new SlidingWindowKernel({
            algorithm: 'sliding-window',
            limit: 6,
            window: 1000,
            slots: 5,
          })
          kernel.resize(1)
          kernel.clear(0)
          const state = new Array<number>(kernel.width)
          let now = 0
          for (const { gap, permits } of steps) {
            now += gap
            kernel.take(0, now, permits)
            kernel.read(0, state)
            for (let ask = 1; ask <= 6; ask++) {
              expect(kernel.wait(0, now, ask)).toBe(reference(state, 5, 1000, now, 6, ask))
            }
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})
