import { describe, expect, it } from 'vitest'
import { ManualClock } from './clock'
import { concurrency } from './concurrency/concurrency'
import { bulkheaded } from './decorators/bulkheaded'
import { rateLimited } from './decorators/rate-limited'
import { fixedWindow } from './fixed-window/fixed-window'
import { slidingWindow } from './sliding-window/sliding-window'
import { tokenBucket } from './token-bucket/token-bucket'
import { warmUpTokenBucket } from './warm-up/warm-up-token-bucket'

// Issue 10: a refund arriving after the window (slot, bucket period) its permits were
// taken in credited the next one. With the take's receipt, only what still counts comes back.
describe('refund with a receipt', () => {
  it('fixed window: a refund after the window ended gives nothing back', () => {
    const clock = new ManualClock()
    const limiter = fixedWindow({ limit: 1, window: 50, clock })
    expect(limiter.tryAcquire()).toBe(true)
    const slow = limiter.receipt()
    clock.set(55)
    expect(limiter.tryAcquire()).toBe(true) // the new window's only permit
    limiter.refund(1, slow) // the slow request from the first window finishes now
    expect(limiter.tryAcquire()).toBe(false)
    // Within its own window a refund still counts.
    const taken = limiter.receipt()
    clock.set(120)
    expect(limiter.tryAcquire()).toBe(true)
    limiter.refund(1, limiter.receipt())
    expect(limiter.tryAcquire()).toBe(true)
    expect(taken).not.toBe(limiter.receipt())
  })

  it('sliding window: only the slot the permits were taken in, while it counts', () => {
    const clock = new ManualClock()
    const limiter = slidingWindow({ limit: 1, window: 50, slots: 5, clock })
    expect(limiter.tryAcquire()).toBe(true)
    const slow = limiter.receipt()
    clock.set(60) // slot 0 has wholly left the window (it counts until t = 60)
    expect(limiter.tryAcquire()).toBe(true)
    limiter.refund(1, slow)
    expect(limiter.tryAcquire()).toBe(false)
    expect(limiter.availablePermits()).toBe(0)
    // A refund inside the window gives the permit back.
    clock.set(70)
    limiter.refund(1, limiter.receipt())
    expect(limiter.tryAcquire()).toBe(true)
  })

  it('token bucket: never more than the debt the permits still hold', () => {
    const clock = new ManualClock()
    const limiter = tokenBucket({ limit: 1, window: 50, clock })
    expect(limiter.tryAcquire()).toBe(true) // tat 50
    const slow = limiter.receipt()
    clock.set(55)
    expect(limiter.tryAcquire()).toBe(true) // tat 105
    limiter.refund(1, slow) // its debt drained at 50: nothing left to give back
    expect(limiter.tryAcquire()).toBe(false)
    expect(limiter.retryAfterMs()).toBe(50)
    // capacity + 1 at one instant was the old outcome; a full bucket admits capacity.
    clock.set(1000)
    const burst = tokenBucket({ limit: 2, window: 100, clock })
    expect(burst.tryAcquire(2)).toBe(true)
    const first = burst.receipt()
    clock.set(1100)
    expect(burst.tryAcquire(2)).toBe(true)
    burst.refund(2, first)
    expect(burst.tryAcquire()).toBe(false)
  })

  it('token bucket: a refund while the debt still stands gives back its unexpired part', () => {
    const clock = new ManualClock()
    const limiter = tokenBucket({ limit: 1, window: 50, clock })
    expect(limiter.tryAcquire()).toBe(true) // tat 50
    const a = limiter.receipt()
    clock.set(40)
    limiter.refund(1, a) // 10 ms of its debt is left: tat back to 40
    expect(limiter.tryAcquire()).toBe(true)
    expect(limiter.tryAcquire()).toBe(false)
  })

  it('warm-up: same rule as the token bucket', () => {
    const clock = new ManualClock()
    const limiter = warmUpTokenBucket({ limit: 3, capacity: 1, warmUp: 0, clock })
    expect(limiter.tryAcquire()).toBe(true)
    const slow = limiter.receipt()
    clock.set(400)
    expect(limiter.tryAcquire()).toBe(true)
    limiter.refund(1, slow)
    expect(limiter.tryAcquire()).toBe(false)
  })

  it('without a receipt a refund is taken to be of the latest permits, as before', () => {
    const clock = new ManualClock()
    const limiter = fixedWindow({ limit: 1, window: 50, clock })
    expect(limiter.tryAcquire()).toBe(true)
    limiter.refund()
    expect(limiter.tryAcquire()).toBe(true)
  })
})

describe('decorator and wait options refuse unknown names (issue 11)', () => {
  it('rateLimited, bulkheaded, acquire and enter', async () => {
    const clock = new ManualClock()
    expect(() => rateLimited(tokenBucket({ limit: 1, clock }), { wiat: '1s' } as never)).toThrow(
      new TypeError('rateLimited: unknown option "wiat" (did you mean "wait"?)'),
    )
    expect(() => bulkheaded(concurrency({ max: 1 }), { timeout: '1s' } as never)).toThrow(
      new TypeError('bulkheaded: unknown option "timeout"'),
    )
    await expect(
      tokenBucket({ limit: 1, clock }).acquire(1, { timout: 5 } as never),
    ).rejects.toThrow(
      new TypeError('tokenBucket.acquire: unknown option "timout" (known: timeout, signal)'),
    )
    await expect(concurrency({ max: 1 }).enter({ permit: 2 } as never)).rejects.toThrow(
      new TypeError('concurrency.enter: unknown option "permit" (known: timeout, signal, permits)'),
    )
  })
})
