import { describe, expect, it } from 'vitest'
import { normalizeSpec, rateKernel } from '../algorithms'
import { ManualClock } from '../clock'
import { tokenBucket } from '../token-bucket/token-bucket'
import type { RateLimiter } from '../types'
import { warmUpTokenBucket } from './warm-up-token-bucket'

function takeAll(limiter: RateLimiter): number {
  let taken = 0
  while (taken < 10_000 && limiter.tryAcquire()) taken++
  return taken
}

describe('warmUpTokenBucket', () => {
  it('reports its steady configuration', () => {
    expect(warmUpTokenBucket({ limit: 3, warmUp: '1m' })).toMatchObject({
      name: 'warm-up',
      limit: 3,
      windowMs: 1000,
    })
  })

  it('runs at a third of the rate when cold; capacity 1 still admits one at a time', () => {
    const clock = new ManualClock()
    const limiter = warmUpTokenBucket({ limit: 3, capacity: 1, warmUp: '1h', clock })
    expect(limiter.tryAcquire()).toBe(true)
    expect(limiter.tryAcquire()).toBe(false)
    // Cold interval is 3·T = 3 · 333.33 ms = 1 s exactly.
    expect(limiter.retryAfterMs()).toBe(1000)
    clock.advance(999)
    expect(limiter.tryAcquire()).toBe(false)
    clock.advance(1)
    expect(limiter.tryAcquire()).toBe(true)
    // One second into a one-hour ramp the interval has shrunk by 2·T·(1 s / 1 h): in ticks
    // of 1/3 µs, 3·T − floor(2·T·age / warmUp) = 3,000,000 − 555, a wait of 999,815 µs.
    expect(limiter.retryAfterMs()).toBe(999.815)
  })

  // limit 12/s, capacity 12: T = 83.33 ms, τ = 1 s. The burst is τ / interval, and the
  // interval shrinks from 3·T to T over the minute, with no traffic at all.
  it.each([
    [0, 4],
    [15_000, 4],
    [30_000, 6],
    [45_000, 8],
    [59_999, 11],
    [60_000, 12],
    [600_000, 12],
  ])('by age alone, at %d ms the burst is %d', (age, burst) => {
    const clock = new ManualClock(5000)
    const limiter = warmUpTokenBucket({ limit: 12, capacity: 12, warmUp: '1m', clock })
    clock.advance(age)
    expect(limiter.availablePermits()).toBe(burst)
    expect(takeAll(limiter)).toBe(burst)
  })

  it('warms by age, not by traffic: a busy and an idle limiter are equally warm', () => {
    const clock = new ManualClock()
    const busy = warmUpTokenBucket({ limit: 10, warmUp: '10s', clock })
    const idle = warmUpTokenBucket({ limit: 10, warmUp: '10s', clock })
    for (let t = 0; t < 10_000; t += 7) {
      clock.set(t)
      busy.tryAcquire()
    }
    clock.set(20_000)
    expect(takeAll(idle)).toBe(10)
    expect(takeAll(busy)).toBe(10)
    expect(busy.retryAfterMs()).toBe(100)
    expect(idle.retryAfterMs()).toBe(100)
  })

  it('retryAfterMs solves the shrinking interval exactly (kinks included)', () => {
    const clock = new ManualClock()
    const limiter = warmUpTokenBucket({ limit: 3, capacity: 3, warmUp: '3s', clock })
    expect(takeAll(limiter)).toBe(1)
    // Debt 1000 − t plus the interval 1000 − (2/9)·t must fit τ = 1000: t = 9000/11 ms,
    // found to the microsecond (rounded up).
    const retry = limiter.retryAfterMs()
    expect(retry).toBe(818.182)
    clock.set(retry - 0.001)
    expect(limiter.tryAcquire()).toBe(false)
    clock.set(retry)
    expect(limiter.tryAcquire()).toBe(true)
    // Past the warm-up it is a plain token bucket.
    clock.set(10_000)
    expect(takeAll(limiter)).toBe(3)
    expect(limiter.retryAfterMs(2)).toBe(666.667)
    expect(limiter.resetMs()).toBe(1000)
  })

  it('a request for more than capacity can never pass', () => {
    const clock = new ManualClock()
    const limiter = warmUpTokenBucket({ limit: 3, warmUp: '1s', clock })
    expect(limiter.tryAcquire(4)).toBe(false)
    expect(limiter.retryAfterMs(4)).toBe(Number.POSITIVE_INFINITY)
    // 3 permits are within capacity: only a warm, full bucket takes them at once.
    expect(limiter.retryAfterMs(3)).toBe(1000)
  })

  it('a warm-up of 0 is a plain token bucket', () => {
    const clock = new ManualClock()
    const warm = warmUpTokenBucket({ limit: 7, window: '100ms', warmUp: 0, clock })
    const plain = tokenBucket({ limit: 7, window: '100ms', clock })
    for (let t = 0; t < 1000; t += 3) {
      clock.set(t)
      expect(warm.tryAcquire()).toBe(plain.tryAcquire())
    }
  })

  it('refund gives back at the current interval, never beyond fresh', () => {
    const clock = new ManualClock()
    const limiter = warmUpTokenBucket({ limit: 12, warmUp: '1m', clock })
    expect(takeAll(limiter)).toBe(4)
    limiter.refund(2)
    expect(limiter.availablePermits()).toBe(2)
    limiter.refund(50)
    expect(limiter.availablePermits()).toBe(4)
    expect(limiter.resetMs()).toBe(0)
  })

  it('finds a wait past 2^53 µs (a forced debt of centuries) instead of searching forever', () => {
    const spec = normalizeSpec({ algorithm: 'warm-up', limit: 1, window: '1m', warmUp: '5s' })
    const kernel = rateKernel(spec as never)
    kernel.resize(1)
    kernel.clear(0, 0)
    // 10^9 permits at the cold interval of 3 minutes: 5,700 years of debt.
    kernel.force(0, 0, 1e9)
    expect(kernel.wait(0, 0, 1)).toBe(180_000_000_000_000)
  })
})
