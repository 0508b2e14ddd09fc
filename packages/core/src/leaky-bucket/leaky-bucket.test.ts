import { describe, expect, it } from 'vitest'
import { ManualClock } from '../clock'
import { tokenBucket } from '../token-bucket/token-bucket'
import { leakyBucket } from './leaky-bucket'

describe('leakyBucket', () => {
  it('reports its configuration', () => {
    expect(leakyBucket({ limit: 2, window: '1s' })).toMatchObject({
      name: 'leaky-bucket',
      limit: 2,
      windowMs: 1000,
    })
  })

  // The seed's contrast: after 50 ms idle at 100/s, the token bucket (capacity 3) has
  // its burst back; the leaky bucket has accumulated nothing but the next permit.
  it('reports 1 available after idling, where a token bucket reports its capacity', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 100, capacity: 3, clock })
    const leak = leakyBucket({ limit: 100, clock })
    clock.advance(50)
    expect(bucket.availablePermits()).toBe(3)
    expect(leak.availablePermits()).toBe(1)
    clock.advance(3_600_000)
    expect(leak.availablePermits()).toBe(1)
  })

  it('is strictly paced: one permit per interval, whatever the idle time', () => {
    const clock = new ManualClock()
    const leak = leakyBucket({ limit: 100, clock })
    const rows: [number, boolean][] = [
      [0, true],
      [0, false],
      [5, false],
      [9, false],
      [10, true],
      [10, false],
      [20, true],
      [1000, true],
      [1000, false],
      [1009, false],
      [1010, true],
    ]
    for (const [t, admitted] of rows) {
      clock.set(t)
      expect([t, leak.tryAcquire()]).toEqual([t, admitted])
    }
  })

  it('never admits more than one permit at once', () => {
    const clock = new ManualClock()
    const leak = leakyBucket({ limit: 10, clock })
    expect(leak.tryAcquire(2)).toBe(false)
    expect(leak.retryAfterMs(2)).toBe(Number.POSITIVE_INFINITY)
    expect(leak.availablePermits()).toBe(1)
  })

  it('paces 7 per 100 ms, with retryAfterMs landing on each slot to the microsecond', () => {
    const clock = new ManualClock()
    const leak = leakyBucket({ limit: 7, window: '100ms', clock })
    const times: number[] = []
    for (let i = 0; i < 15; i++) {
      clock.advance(leak.retryAfterMs())
      expect(leak.tryAcquire()).toBe(true)
      times.push(Math.round(clock.now() * 1000))
    }
    // A caller that comes back when told arrives at its slot rounded up to the next whole
    // µs, and with a burst of 1 the next slot is counted from there: T = 14,285 5/7 µs.
    const expected = [0]
    for (let i = 1; i < 15; i++) expected.push(Math.ceil(expected[i - 1]! + 100_000 / 7))
    expect(times).toEqual(expected)
    // Waiting instead (acquire) reserves the exact slots: see acquire.test.ts.
  })

  it('retryAfterMs, resetMs and refund', () => {
    const clock = new ManualClock()
    const leak = leakyBucket({ limit: 4, window: '1s', clock })
    expect(leak.tryAcquire()).toBe(true)
    expect([leak.retryAfterMs(), leak.resetMs()]).toEqual([250, 250])
    clock.advance(249)
    expect(leak.tryAcquire()).toBe(false)
    clock.advance(1)
    expect(leak.tryAcquire()).toBe(true)
    leak.refund()
    expect(leak.availablePermits()).toBe(1)
    leak.refund(5)
    expect(leak.availablePermits()).toBe(1)
    expect(leak.resetMs()).toBe(0)
  })
})
