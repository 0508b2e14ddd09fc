import { describe, expect, it } from 'vitest'
import { flush, track } from '../test/helpers'
import { adaptiveConcurrency } from './adaptive/adaptive-concurrency'
import { ManualClock } from './clock'
import { concurrency } from './concurrency/concurrency'
import { createLimiter } from './create-limiter'
import type { RateLimitError } from './errors'
import { fixedWindow } from './fixed-window/fixed-window'
import { leakyBucket } from './leaky-bucket/leaky-bucket'
import { slidingWindow } from './sliding-window/sliding-window'
import { tokenBucket } from './token-bucket/token-bucket'
import type { Carry, RateLimiter } from './types'
import { warmUpTokenBucket } from './warm-up/warm-up-token-bucket'

const MODES: readonly Carry[] = ['proportional', 'as-is', 'additive', 'reset']

/**
 * When each of `n` callers arriving now would be served: a bucket schedules each
 * `acquire` at once, so the next caller's wait is `retryAfterMs` after the last reserved.
 */
function nextCallers(limiter: RateLimiter, n: number): number[] {
  const waits: number[] = []
  for (let i = 0; i < n; i++) {
    waits.push(limiter.retryAfterMs(1))
    void limiter.acquire(1)
  }
  return waits
}

describe('token bucket: existing debt stays owed (Guava: 2 per second, acquire(10), then 1 per second)', () => {
  // Guava's next caller pays for the one before; here each caller waits for its own
  // permits, so "acquire(10)" is a waiter whose 10 permits are reserved 5 s ahead.
  it.each([
    // mode, then when the three next callers are served (ms from now). At 2 per second
    // the 20 permits granted (10 taken, 10 reserved) are paid off at 20 · 500 ms − the
    // capacity's 10 · 500 ms = 5 s, in every mode but reset; from then on 1 per second:
    // the next caller at 5 s + 1 s = 6 s, then 7 s and 8 s.
    ['proportional', [6000, 7000, 8000]],
    ['as-is', [6000, 7000, 8000]],
    ['additive', [6000, 7000, 8000]],
    ['reset', [0, 0, 0]],
  ] as const)('%s: the waiter is served at 5 s, the next callers at %j', async (carry, next) => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 2, capacity: 10, clock })
    expect(bucket.tryAcquire(10)).toBe(true)
    const waiter = track(bucket.acquire(10))
    bucket.reconfigure({ limit: 1, capacity: 10 }, { carry })
    expect(bucket.limit).toBe(1)
    expect(nextCallers(bucket, 3)).toEqual(next)
    await clock.advanceAsync(4999)
    expect(waiter.status).toBe('pending')
    await clock.advanceAsync(1)
    expect(waiter.status).toBe('resolved')
  })

  it('without a reconfiguration the next callers would be served at 5.5, 6 and 6.5 s', () => {
    const bucket = tokenBucket({ limit: 2, capacity: 10, clock: new ManualClock() })
    bucket.tryAcquire(10)
    void bucket.acquire(10)
    expect(nextCallers(bucket, 3)).toEqual([5500, 6000, 6500])
  })

  it('a waiter cancelled after the change hands its time back', async () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 2, clock })
    bucket.tryAcquire(2)
    const controller = new AbortController()
    const waiter = track(bucket.acquire(2, { signal: controller.signal }))
    bucket.reconfigure({ limit: 1 })
    // Paid off at 1 s (when the waiter is served), then one permit a second.
    expect(bucket.retryAfterMs(1)).toBe(2000)
    controller.abort()
    await flush()
    expect(waiter.status).toBe('rejected')
    expect(bucket.retryAfterMs(1)).toBe(1000)
  })
})

describe('token bucket: idle credit never exceeds the new capacity', () => {
  it.each([
    // mode, available after 3 → 7 with 1 of 3 left, then after 7 → 3 with 6 of 7 left
    ['proportional', 2, 2],
    ['as-is', 1, 3],
    ['additive', 5, 2],
    ['reset', 7, 3],
  ] as const)('%s: 1 of 3 becomes %i of 7; 6 of 7 becomes %i of 3', (carry, up, down) => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 3, clock })
    bucket.tryAcquire(2)
    bucket.reconfigure({ limit: 7 }, { carry })
    expect(bucket.availablePermits()).toBe(up)
    bucket.reconfigure({ limit: 7 }, { carry: 'reset' })
    bucket.tryAcquire(1)
    bucket.reconfigure({ limit: 3 }, { carry })
    expect(bucket.availablePermits()).toBe(down)
  })

  it('proportional is exact at 3 → 7: 1 permit is 7/3, so the third comes 2/3 of a permit later', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 3, clock })
    bucket.tryAcquire(2)
    bucket.reconfigure({ limit: 7 })
    expect(bucket.availablePermits()).toBe(2)
    // 7/3 − 2 = 1/3 short of 3, wait: (2/3 of a permit at 7 per second) = 95.238… ms.
    expect(bucket.retryAfterMs(3)).toBe(95.239)
    clock.advance(95.238)
    expect(bucket.tryAcquire(3)).toBe(false)
    clock.advance(0.001)
    expect(bucket.tryAcquire(3)).toBe(true)
  })

  it.each(MODES)('%s: a full bucket is full under the new capacity, up or down', (carry) => {
    const bucket = tokenBucket({ limit: 3, clock: new ManualClock() })
    bucket.reconfigure({ limit: 7 }, { carry })
    expect(bucket.availablePermits()).toBe(7)
    bucket.reconfigure({ limit: 2 }, { carry })
    expect(bucket.availablePermits()).toBe(2)
  })
})

describe('leaky bucket: a started interval carries over in time', () => {
  it.each([
    // mode, when the next permit passes after 10/s → 5/s half-way through an interval
    ['proportional', 150],
    ['as-is', 150],
    ['additive', 150],
    ['reset', 50],
  ] as const)('%s: next permit at %i ms', (carry, at) => {
    const clock = new ManualClock()
    const pace = leakyBucket({ limit: 10, clock })
    pace.tryAcquire()
    clock.advance(50)
    pace.reconfigure({ limit: 5 }, { carry })
    // Half a permit had come back; the other half takes 100 ms at 5 per second.
    expect(pace.retryAfterMs()).toBe(at - 50)
  })
})

describe('warm-up bucket: keeps its age', () => {
  it.each(MODES)('%s: half-way through warm-up, the new spec is half warm too', (carry) => {
    const clock = new ManualClock()
    const bucket = warmUpTokenBucket({ limit: 30, warmUp: '30s', clock })
    clock.advance(15_000)
    bucket.reconfigure({ limit: 60, warmUp: '30s' }, { carry })
    // At age 15 s of 30 the interval is 2·T: a burst of 60·T / 2·T = 30, where a bucket
    // made now (cold, 3·T) would allow 20.
    expect(bucket.availablePermits()).toBe(30)
    clock.advance(15_000)
    expect(bucket.availablePermits()).toBe(60)
  })
})

describe('sliding window: a window half used', () => {
  function halfUsed(): [RateLimiter, ManualClock] {
    const clock = new ManualClock()
    const window = slidingWindow({ limit: 10, window: '1s', slots: 10, clock })
    window.tryAcquire(5)
    clock.advance(500)
    return [window, clock]
  }

  it.each([
    // mode, available now, at 1.1 s (the 5 have left), at 1.6 s
    ['proportional', 10, 20, 20],
    ['as-is', 5, 10, 20],
    ['additive', 15, 20, 20],
    ['reset', 20, 20, 20],
  ] as const)('%s: 10 → 20 leaves %i, then %i at 1.1 s, %i at 1.6 s', (carry, now, later, last) => {
    const [window, clock] = halfUsed()
    window.reconfigure({ limit: 20, window: '1s', slots: 10 }, { carry })
    expect(window.availablePermits()).toBe(now)
    clock.set(1100)
    expect(window.availablePermits()).toBe(later)
    clock.set(1600)
    expect(window.availablePermits()).toBe(last)
  })

  it.each([
    // mode, available now, at 1.1 s
    ['proportional', 2, 4],
    ['as-is', 4, 4],
    ['additive', 0, 4], // 5 still count against 4: owed until they leave
    ['reset', 4, 4],
  ] as const)('%s: 10 → 4 leaves %i, then %i at 1.1 s', (carry, now, later) => {
    const [window, clock] = halfUsed()
    window.reconfigure({ limit: 4 }, { carry })
    expect(window.availablePermits()).toBe(now)
    clock.set(1100)
    expect(window.availablePermits()).toBe(later)
  })

  it.each([
    ['proportional', 'pending'],
    ['as-is', 'pending'],
    ['additive', 'resolved'],
    ['reset', 'resolved'],
  ] as const)('%s: a waiter queued before 2 → 3 is %s at once', async (carry, status) => {
    const clock = new ManualClock()
    const window = slidingWindow({ limit: 2, window: '1s', slots: 2, clock })
    window.tryAcquire(2)
    const waiter = track(window.acquire(1))
    clock.advance(100)
    await flush()
    window.reconfigure({ limit: 3, slots: 2 }, { carry })
    await flush()
    expect(waiter.status).toBe(status)
    // Otherwise it is served when the first two leave the window (slot 0 ends at 1.5 s).
    await clock.advanceAsync(1399)
    expect(waiter.status).toBe(status)
    await clock.advanceAsync(1)
    expect(waiter.status).toBe('resolved')
  })

  it('serves the queue in order under the new limit, and rejects a waiter that can never fit', async () => {
    const clock = new ManualClock()
    const window = slidingWindow({ limit: 3, window: '1s', slots: 2, clock })
    window.tryAcquire(3)
    const big = track(window.acquire(3))
    const small = track(window.acquire(1))
    window.reconfigure({ limit: 2, slots: 2 })
    await flush()
    expect(big.status).toBe('rejected')
    expect((big.reason as RateLimitError).code).toBe('ERR_SLUICE_LIMITED')
    expect(small.status).toBe('pending')
    await clock.advanceAsync(1500)
    expect(small.status).toBe('resolved')
  })
})

describe('fixed window: a window half used', () => {
  it.each([
    ['proportional', 10],
    ['as-is', 5],
    ['additive', 15],
    ['reset', 20],
  ] as const)('%s: 10 → 20 leaves %i, and the next window is fresh', (carry, now) => {
    const clock = new ManualClock()
    const window = fixedWindow({ limit: 10, clock })
    window.tryAcquire(5)
    clock.advance(500)
    window.reconfigure({ limit: 20 }, { carry })
    expect(window.availablePermits()).toBe(now)
    clock.set(1000)
    expect(window.availablePermits()).toBe(20)
  })

  it.each([
    ['proportional', 0], // 2 of 10 is 0.8 of 4
    ['as-is', 2],
    ['additive', 0], // 8 still count against 4
    ['reset', 4],
  ] as const)('%s: 10 → 4 with 8 used leaves %i', (carry, now) => {
    const clock = new ManualClock()
    const window = fixedWindow({ limit: 10, clock })
    window.tryAcquire(8)
    window.reconfigure({ limit: 4 }, { carry })
    expect(window.availablePermits()).toBe(now)
  })
})

describe('concurrency: max up or down', () => {
  it('lowering below inFlight revokes nothing and refuses new entries until enough are released', async () => {
    const bulkhead = concurrency({ max: 3, maxQueue: 5, clock: new ManualClock() })
    const held = [bulkhead.tryEnter(), bulkhead.tryEnter(), bulkhead.tryEnter()]
    const first = track(bulkhead.enter())
    const second = track(bulkhead.enter())
    bulkhead.reconfigure({ max: 1, maxQueue: 5 })
    expect(bulkhead.max).toBe(1)
    expect(bulkhead.inFlight).toBe(3)
    expect(bulkhead.availablePermits()).toBe(0)
    held[0]!.release()
    held[1]!.release()
    await flush()
    expect(first.status).toBe('pending')
    held[2]!.release()
    await flush()
    expect(first.status).toBe('resolved')
    expect(second.status).toBe('pending')
    bulkhead.reconfigure({ max: 2, maxQueue: 5 })
    await flush()
    expect(second.status).toBe('resolved')
    expect(bulkhead.inFlight).toBe(2)
  })

  it('a shorter maxQueue turns away only newcomers; a waiter above the new max is rejected', async () => {
    const bulkhead = concurrency({ max: 2, maxQueue: 3 })
    bulkhead.tryAcquire(2)
    const one = track(bulkhead.enter())
    const two = track(bulkhead.enter({ permits: 2 }))
    bulkhead.reconfigure({ max: 1 }) // maxQueue back to its default, 0
    await flush()
    expect(one.status).toBe('pending')
    expect(two.status).toBe('rejected')
    expect((two.reason as RateLimitError).code).toBe('ERR_SLUICE_LIMITED')
    await expect(bulkhead.enter()).rejects.toMatchObject({ code: 'ERR_SLUICE_QUEUE_FULL' })
    bulkhead.release(2)
    await flush()
    expect(one.status).toBe('resolved')
  })
})

describe('concurrency: priorities stay as built', () => {
  it('keeps partitions when they are left out or given unchanged, and refuses a change', () => {
    const bulkhead = concurrency({ max: 4, partitions: { critical: 0.5 } })
    bulkhead.reconfigure({ max: 8 })
    bulkhead.reconfigure({ max: 8, partitions: { critical: 0.5 } })
    expect(() => bulkhead.reconfigure({ max: 2, partitions: { critical: 0.25 } })).toThrow(
      /concurrency\.reconfigure: priorities \(partitions, queuePolicy, queueTarget, queueInterval\) cannot change/,
    )
    expect([bulkhead.max, bulkhead.tryAcquire(8), bulkhead.tryAcquire(1)]).toEqual([8, true, false])
  })
})

describe('adaptive concurrency', () => {
  it('keeps what it learned within the new bounds; reset starts over with a probe', () => {
    const changes: string[] = []
    const limiter = adaptiveConcurrency({
      algorithm: 'aimd',
      max: 10,
      probeConcurrency: 4,
      onLimitChange: ({ limit, reason }) => changes.push(`${reason} ${limit}`),
    })
    expect(limiter.limit).toBe(4) // probing
    limiter.reconfigure({ algorithm: 'aimd', max: 3, probeConcurrency: 4 })
    expect([limiter.limit, limiter.maxLimit]).toEqual([3, 3])
    expect(() => limiter.reconfigure({ algorithm: 'vegas' })).toThrow(
      /adaptiveConcurrency\.reconfigure: "algorithm" must be 'aimd', got "vegas"/,
    )
    limiter.reconfigure({ max: 8, probeConcurrency: 2 }, { carry: 'reset' })
    expect([limiter.limit, limiter.probing]).toEqual([2, true])
    expect(changes).toEqual(['reconfigure 3', 'probe 2'])
  })
})

describe('bad input is refused and the old spec keeps working', () => {
  it.each([
    [{ algorithm: 'fixed-window', limit: 5 }, TypeError, /"algorithm" must be 'token-bucket'/],
    [
      { limit: 0 },
      RangeError,
      /tokenBucket\.reconfigure: "limit" must be a positive integer, got 0/,
    ],
    [
      { limit: 5, windowMs: 1000 },
      TypeError,
      /tokenBucket\.reconfigure: unknown option "windowMs"/,
    ],
    [{ limit: 5, name: 'other' }, TypeError, /"name" cannot change/],
    [{ limit: 5, clock: new ManualClock() }, TypeError, /"clock" cannot change/],
    [null, TypeError, /tokenBucket\.reconfigure: spec must be an object, got null/],
  ])('%j', (spec, kind, message) => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 3, name: 'api', clock })
    bucket.tryAcquire(2)
    expect(() => bucket.reconfigure(spec as never)).toThrow(kind)
    expect(() => bucket.reconfigure(spec as never)).toThrow(message)
    expect([bucket.limit, bucket.availablePermits(), bucket.retryAfterMs(2)]).toEqual([
      3, 1, 333.334,
    ])
  })

  it.each([
    [
      { carry: 'proportionally' },
      /"carry" must be one of 'proportional', 'as-is', 'reset', 'additive' \(did you mean 'proportional'\?\), got "proportionally"/,
    ],
    [{ carry: 'asis' }, /did you mean 'as-is'/],
    [{ cary: 'reset' }, /unknown option "cary" \(did you mean "carry"\?\)/],
    ['reset', /options must be an object/],
  ])('options %j', (options, message) => {
    const window = fixedWindow({ limit: 3, clock: new ManualClock() })
    window.tryAcquire(2)
    expect(() => window.reconfigure({ limit: 10 }, options as never)).toThrow(TypeError)
    expect(() => window.reconfigure({ limit: 10 }, options as never)).toThrow(message)
    expect([window.limit, window.availablePermits()]).toEqual([3, 1])
  })

  it('takes a whole spec: what is left out is the default, not the current value', () => {
    const window = slidingWindow({ limit: 3, window: '1m', slots: 6, clock: new ManualClock() })
    window.reconfigure({ limit: 4 })
    expect([window.limit, window.windowMs]).toEqual([4, 1000])
  })

  it('takes the spec createLimiter took, name and all', () => {
    const clock = new ManualClock()
    const spec = { algorithm: 'leaky-bucket', limit: 5, name: 'pace' } as const
    const pace = createLimiter(spec, clock)
    pace.reconfigure({ ...spec, limit: 10 })
    expect([pace.name, pace.limit]).toEqual(['pace', 10])
  })
})
