import { describe, expect, it } from 'vitest'
import { ManualClock } from '../clock'
import type { Duration } from '../types'
import { tokenBucket } from './token-bucket'

function takeAll(limiter: { tryAcquire(): boolean }): number {
  let taken = 0
  while (taken < 100_000 && limiter.tryAcquire()) taken++
  return taken
}

describe('tokenBucket', () => {
  it('reports its configuration', () => {
    const bucket = tokenBucket({ limit: 100, window: '1m', capacity: 7, name: 'api' })
    expect(bucket).toMatchObject({ name: 'api', limit: 100, windowMs: 60_000 })
    expect(tokenBucket({ limit: 5 })).toMatchObject({ name: 'token-bucket', windowMs: 1000 })
  })

  // The seed's example: 100 per second with capacity 3 is one permit every 10 ms and
  // bursts of at most 3. Rows run in order: (time, permits, admitted?, available after).
  it.each([0, 1_000_000.5])('capacity 3 at 100/s, starting at t=%d', (start) => {
    const clock = new ManualClock(start)
    const bucket = tokenBucket({ limit: 100, window: '1s', capacity: 3, clock })
    const rows: [number, number, boolean, number][] = [
      [0, 1, true, 2],
      [0, 1, true, 1],
      [0, 1, true, 0],
      [0, 1, false, 0],
      [5, 1, false, 0],
      [10, 1, true, 0],
      [10, 1, false, 0],
      [19, 1, false, 0],
      [25, 1, true, 0],
      [60, 2, true, 1],
      [60, 2, false, 1],
      [70, 2, true, 0],
      [3_600_000, 4, false, 3],
      [3_600_000, 3, true, 0],
    ]
    for (const [t, permits, admitted, available] of rows) {
      clock.set(start + t)
      expect([t, permits, bucket.tryAcquire(permits)]).toEqual([t, permits, admitted])
      expect([t, bucket.availablePermits()]).toEqual([t, available])
    }
  })

  it('retryAfterMs and resetMs give exact waits', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 100, capacity: 3, clock })
    expect([bucket.retryAfterMs(), bucket.resetMs()]).toEqual([0, 0])
    expect(bucket.tryAcquire(3)).toBe(true)
    expect([1, 2, 3, 4].map((n) => bucket.retryAfterMs(n))).toEqual([
      10,
      20,
      30,
      Number.POSITIVE_INFINITY,
    ])
    expect(bucket.resetMs()).toBe(30)
    clock.advance(4)
    expect([bucket.retryAfterMs(), bucket.retryAfterMs(3), bucket.resetMs()]).toEqual([6, 26, 26])
  })

  it('idling never fills the bucket beyond capacity', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 10, capacity: 4, clock })
    expect(bucket.availablePermits()).toBe(4)
    clock.advance(86_400_000)
    expect(bucket.availablePermits()).toBe(4)
    expect(takeAll(bucket)).toBe(4)
  })

  it('a request for more than capacity is refused, consumes nothing and can never pass', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 10, capacity: 3, clock })
    expect(bucket.tryAcquire(4)).toBe(false)
    expect(bucket.retryAfterMs(4)).toBe(Number.POSITIVE_INFINITY)
    expect(bucket.availablePermits()).toBe(3)
    clock.advance(60_000)
    expect(bucket.tryAcquire(4)).toBe(false)
    expect(bucket.tryAcquire(3)).toBe(true)
  })

  it('refund gives permits back but never lifts the bucket above capacity', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 10, capacity: 5, clock })
    expect(bucket.tryAcquire(5)).toBe(true)
    bucket.refund(2)
    expect(bucket.availablePermits()).toBe(2)
    bucket.refund(100)
    expect(bucket.availablePermits()).toBe(5)
    expect(bucket.resetMs()).toBe(0)
    bucket.refund()
    expect(takeAll(bucket)).toBe(5)
    expect(bucket.retryAfterMs()).toBe(100)
  })

  // T = window/limit is not representable for these (333.33… ms, 14.2857… ms), which is
  // exactly where naive floating point loses the last permit of a full bucket.
  describe.each<[number, Duration, number | undefined]>([
    [3, '1s', undefined],
    [7, '100ms', undefined],
    [1, '3s', undefined],
    [1000, '1s', undefined],
    [1, '1s', undefined],
    [3, '1s', 1],
    [10, '1m', 7],
    [6, '0.1s', 4],
    [3, 1, undefined],
  ])('%d per %s (capacity %s)', (limit, window, capacity) => {
    it.each([0, 0.25, 123_456.789, 86_400_000 * 30])('from t=%d', (start) => {
      const clock = new ManualClock(start)
      const options =
        capacity === undefined ? { limit, window, clock } : { limit, window, capacity, clock }
      const bucket = tokenBucket(options)
      const full = capacity ?? limit
      expect(bucket.availablePermits()).toBe(full)
      expect(takeAll(bucket)).toBe(full)
      expect(bucket.availablePermits()).toBe(0)

      // Advancing by exactly retryAfterMs admits; 1 µs less does not. Waits are whole
      // microseconds, rounded up: T = window / limit exactly, then up to the next µs.
      const t0 = clock.now()
      const retry = bucket.retryAfterMs()
      expect(retry).toBe(Math.ceil((bucket.windowMs * 1000) / limit) / 1000)
      clock.set(t0 + retry - 0.001)
      expect(bucket.tryAcquire()).toBe(false)
      clock.set(t0 + retry)
      expect(bucket.tryAcquire()).toBe(true)
      expect(bucket.tryAcquire()).toBe(false)

      // resetMs: back to exactly full after it, not before. In ticks of 1/limit µs the
      // bucket owes (full + 1)·T from the start and t1 is ceil(T) µs later (with capacity
      // 1 the bucket was empty by then: it owes T from t1), rounded up to whole µs.
      const t1 = clock.now()
      const reset = bucket.resetMs()
      const us = bucket.windowMs * 1000
      const owed = Math.max((full + 1) * us - limit * Math.ceil(us / limit), us)
      expect(reset).toBe(Math.ceil(owed / limit) / 1000)
      clock.set(t1 + reset - 0.001)
      expect(bucket.availablePermits()).toBeLessThan(full)
      clock.set(t1 + reset)
      expect(bucket.availablePermits()).toBe(full)
      expect(bucket.resetMs()).toBe(0)
    })
  })

  it('sustains exactly limit per window after the burst (7 per 100 ms over 10 s)', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 7, window: '100ms', capacity: 2, clock })
    let admitted = 0
    for (let t = 0; t <= 10_000; t++) {
      clock.set(t)
      if (bucket.tryAcquire()) admitted++
    }
    // The burst of 2 at t=0, then one every 100/7 ms: 10_000 · 7 / 100 more. Polling
    // at whole milliseconds never loses the fractions, because the slack of the second
    // permit absorbs the lag (with capacity 1, each late poll would push the schedule).
    expect(admitted).toBe(2 + 700)
  })

  // τ = 8.64·10^20 ticks of 1/limit µs, far past 2^53: counted in two parts, still exact.
  it('10 GB a day (limit 1e10, window 1d) is exact, not refused', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 1e10, window: '1d', clock })
    expect(bucket.availablePermits()).toBe(1e10)
    expect(bucket.tryAcquire(1e10 - 1)).toBe(true)
    expect(bucket.availablePermits()).toBe(1)
    expect(bucket.tryAcquire(2)).toBe(false)
    // One interval is 8.64 µs: the second permit is 9 µs away, rounded up.
    expect(bucket.retryAfterMs(2)).toBe(0.009)
    expect(bucket.tryAcquire()).toBe(true)
    expect(bucket.availablePermits()).toBe(0)
    expect(bucket.resetMs()).toBe(86_400_000)
    // A millisecond drains 10^10 / 86,400,000 = 115.74 permits.
    clock.advance(1)
    expect(bucket.availablePermits()).toBe(115)
    clock.advance(86_400_000)
    expect(bucket.availablePermits()).toBe(1e10)
  })
})
