import { describe, expect, it } from 'vitest'
import { ManualClock } from '../clock'
import { fixedWindow } from './fixed-window'

describe('fixedWindow', () => {
  it('reports its configuration', () => {
    expect(fixedWindow({ limit: 5, window: '1m' })).toMatchObject({
      name: 'fixed-window',
      limit: 5,
      windowMs: 60_000,
    })
  })

  it('counts per window aligned to the clock zero', () => {
    const clock = new ManualClock(1500)
    const window = fixedWindow({ limit: 3, window: 1000, clock })
    const rows: [number, number, boolean, number][] = [
      [1500, 2, true, 1],
      [1500, 2, false, 1],
      [1999, 1, true, 0],
      [1999, 1, false, 0],
      [2000, 3, true, 0],
      [2999, 1, false, 0],
      [3000, 4, false, 3],
      [3000, 1, true, 2],
    ]
    for (const [t, permits, admitted, available] of rows) {
      clock.set(t)
      expect([t, window.tryAcquire(permits)]).toEqual([t, admitted])
      expect([t, window.availablePermits()]).toEqual([t, available])
    }
  })

  // The documented weakness: limit just before a boundary and limit just after it.
  it('admits 2·limit across a window boundary', () => {
    const clock = new ManualClock(999)
    const window = fixedWindow({ limit: 100, window: '1s', clock })
    let admitted = 0
    while (window.tryAcquire()) admitted++
    clock.set(1000)
    while (window.tryAcquire()) admitted++
    expect(admitted).toBe(200)
    expect(clock.now()).toBe(1000)
  })

  it('retryAfterMs and resetMs run to the next boundary, exactly', () => {
    const clock = new ManualClock(250)
    const window = fixedWindow({ limit: 2, window: 1000, clock })
    expect([window.retryAfterMs(), window.resetMs()]).toEqual([0, 0])
    window.tryAcquire()
    expect([window.retryAfterMs(), window.retryAfterMs(2), window.resetMs()]).toEqual([0, 750, 750])
    window.tryAcquire()
    expect(window.retryAfterMs()).toBe(750)
    expect(window.retryAfterMs(3)).toBe(Number.POSITIVE_INFINITY)
    clock.set(999)
    expect(window.tryAcquire()).toBe(false)
    clock.set(1000)
    expect(window.tryAcquire(2)).toBe(true)
  })

  it('lands exactly on the boundary for awkward windows', () => {
    for (const start of [0, 0.1, 123_456_789.7]) {
      const clock = new ManualClock(start)
      const window = fixedWindow({ limit: 7, window: '0.3s', clock })
      for (let round = 0; round < 20; round++) {
        while (window.tryAcquire()) {}
        const t0 = clock.now()
        const retry = window.retryAfterMs()
        if (retry > 1) {
          clock.set(t0 + retry - 1)
          expect(window.tryAcquire()).toBe(false)
        }
        clock.set(t0 + retry)
        expect(window.tryAcquire(7)).toBe(true)
        clock.advance(37.3)
      }
    }
  })

  it('refund gives back within the current window only', () => {
    const clock = new ManualClock()
    const window = fixedWindow({ limit: 5, window: 1000, clock })
    window.tryAcquire(4)
    window.refund(3)
    expect(window.availablePermits()).toBe(4)
    window.refund(10)
    expect(window.availablePermits()).toBe(5)
    expect(window.resetMs()).toBe(0)
    window.tryAcquire(5)
    clock.set(1000)
    window.refund(5)
    expect(window.availablePermits()).toBe(5)
    expect(window.tryAcquire(6)).toBe(false)
  })
})
