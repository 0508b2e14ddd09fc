import { getEventListeners, setMaxListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { flush, track } from '../test/helpers'
import { ManualClock } from './clock'
import { RateLimitError } from './errors'
import { fixedWindow } from './fixed-window/fixed-window'
import { leakyBucket } from './leaky-bucket/leaky-bucket'
import { slidingWindow } from './sliding-window/sliding-window'
import { tokenBucket } from './token-bucket/token-bucket'
import type { Clock, RateLimiter } from './types'
import { warmUpTokenBucket } from './warm-up/warm-up-token-bucket'

/** Resolves each acquire in turn and records the clock time it resolved at. */
function record(clock: ManualClock, calls: Promise<void>[]): (number | string)[] {
  const times: (number | string)[] = calls.map(() => 'pending')
  calls.forEach((call, i) => {
    call.then(
      () => {
        times[i] = clock.now()
      },
      (error: unknown) => {
        times[i] = error instanceof RateLimitError ? error.code : String(error)
      },
    )
  })
  return times
}

const factories: [string, (clock: Clock) => RateLimiter][] = [
  ['tokenBucket', (clock) => tokenBucket({ limit: 2, window: '1s', capacity: 2, clock })],
  ['leakyBucket', (clock) => leakyBucket({ limit: 2, window: '1s', clock })],
  ['warmUpTokenBucket', (clock) => warmUpTokenBucket({ limit: 2, warmUp: 0, clock })],
  ['slidingWindow', (clock) => slidingWindow({ limit: 2, window: '1s', clock })],
  ['fixedWindow', (clock) => fixedWindow({ limit: 2, window: '1s', clock })],
]

describe.each(factories)('%s.acquire (shared contract)', (_, create) => {
  it('resolves at once when permits are free', async () => {
    const clock = new ManualClock()
    const limiter = create(clock)
    const full = limiter.availablePermits()
    await limiter.acquire()
    expect(limiter.availablePermits()).toBe(full - 1)
  })

  it('rejects an aborted signal with its reason and takes nothing', async () => {
    const limiter = create(new ManualClock())
    const reason = new Error('cancelled')
    await expect(limiter.acquire(1, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    expect(limiter.retryAfterMs()).toBe(0)
    expect(limiter.resetMs()).toBe(0)
  })

  it('rejects more permits than it can ever hold with ERR_SLUICE_LIMITED, at once', async () => {
    const clock = new ManualClock()
    const limiter = create(clock)
    const error = await limiter.acquire(3, { timeout: '1h' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RateLimitError)
    expect(error).toMatchObject({
      code: 'ERR_SLUICE_LIMITED',
      retryAfterMs: Number.POSITIVE_INFINITY,
      limiter: limiter.name,
    })
    expect(clock.pendingSleeps).toBe(0)
  })

  it('fails fast with ERR_SLUICE_TIMEOUT when the permits cannot come in time, without sleeping', async () => {
    const clock = new ManualClock()
    const limiter = create(clock)
    while (limiter.tryAcquire()) {}
    const needed = limiter.retryAfterMs()
    const error = await limiter.acquire(1, { timeout: needed - 1 }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'ERR_SLUICE_TIMEOUT', retryAfterMs: needed })
    expect(clock.pendingSleeps).toBe(0)
    expect(limiter.retryAfterMs()).toBe(needed)
    await expect(limiter.acquire(1, { timeout: 0 })).rejects.toMatchObject({
      code: 'ERR_SLUICE_TIMEOUT',
    })
  })

  it('waits through the clock and resolves when its permits come, a timeout of exactly that included', async () => {
    const clock = new ManualClock()
    const limiter = create(clock)
    while (limiter.tryAcquire()) {}
    const needed = limiter.retryAfterMs()
    const waiting = track(limiter.acquire(1, { timeout: needed }))
    await clock.advanceAsync(needed - 1)
    expect(waiting.status).toBe('pending')
    await clock.advanceAsync(1)
    expect(waiting.status).toBe('resolved')
    expect(clock.pendingSleeps).toBe(0)
  })

  it('serves waiters in FIFO order; a later tryAcquire does not overtake them', async () => {
    const clock = new ManualClock()
    const limiter = create(clock)
    while (limiter.tryAcquire()) {}
    const times = record(clock, [limiter.acquire(), limiter.acquire(), limiter.acquire()])
    await flush()
    expect(limiter.tryAcquire()).toBe(false)
    await clock.advanceAsync(5000)
    const served = times as number[]
    expect(served.every((t) => typeof t === 'number')).toBe(true)
    expect([...served].sort((a, b) => a - b)).toEqual(served)
  })

  it('an abort while waiting rejects with the reason and leaves the limiter as before', async () => {
    const clock = new ManualClock()
    const limiter = create(clock)
    while (limiter.tryAcquire()) {}
    const before = [limiter.retryAfterMs(), limiter.resetMs()]
    const controller = new AbortController()
    const waiting = limiter.acquire(1, { signal: controller.signal, timeout: '1h' })
    await flush()
    controller.abort('stop')
    await expect(waiting).rejects.toBe('stop')
    expect([limiter.retryAfterMs(), limiter.resetMs()]).toEqual(before)
    expect(clock.pendingSleeps).toBe(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('10,000 aborted waits leave no waiter, sleeper, listener or permit behind', async () => {
    const clock = new ManualClock()
    const limiter = create(clock)
    const full = limiter.availablePermits()
    while (limiter.tryAcquire()) {}
    const before = [limiter.retryAfterMs(), limiter.resetMs(), limiter.availablePermits()]
    const controller = new AbortController()
    // One signal shared by 10,000 waiters on purpose: not the leak Node's warning suspects.
    setMaxListeners(Number.POSITIVE_INFINITY, controller.signal)
    const waits: Promise<unknown>[] = []
    for (let i = 0; i < 10_000; i++) {
      const options =
        i % 3 === 0
          ? { signal: controller.signal }
          : { signal: controller.signal, timeout: '1d' as const }
      waits.push(limiter.acquire(1, options).catch((reason: unknown) => reason))
    }
    await flush()
    controller.abort('shutdown')
    const reasons = await Promise.all(waits)
    expect(reasons.filter((reason) => reason !== 'shutdown')).toEqual([])
    expect([limiter.retryAfterMs(), limiter.resetMs(), limiter.availablePermits()]).toEqual(before)
    expect(clock.pendingSleeps).toBe(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    await clock.advanceAsync(limiter.resetMs())
    expect(limiter.availablePermits()).toBe(full)
  })
})

describe('GCRA waiting: reservations', () => {
  it('each waiter takes its own slot, in order (leaky bucket, 100/s)', async () => {
    const clock = new ManualClock()
    const leak = leakyBucket({ limit: 100, clock })
    const times = record(clock, [leak.acquire(), leak.acquire(), leak.acquire(), leak.acquire()])
    await flush()
    expect(times).toEqual([0, 'pending', 'pending', 'pending'])
    // The reservations are taken: a tryAcquire at 15 ms finds the schedule full.
    await clock.advanceAsync(15)
    expect(times).toEqual([0, 10, 'pending', 'pending'])
    expect(leak.tryAcquire()).toBe(false)
    expect(leak.retryAfterMs()).toBe(25)
    await clock.advanceAsync(25)
    expect(times).toEqual([0, 10, 20, 30])
    expect(leak.tryAcquire()).toBe(true)
  })

  // Guava's RateLimiter lets acquire(n) return as soon as the *previous* debt is paid and
  // bills its own permits to the next caller. Here each caller waits for its own permits.
  it('a caller waits for its own permits; the next caller does not pay for them', async () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 1, window: '1s', capacity: 2, clock })
    const times = record(clock, [bucket.acquire(2), bucket.acquire(2), bucket.acquire(1)])
    await clock.advanceAsync(10_000)
    expect(times).toEqual([0, 2000, 3000])
  })

  it('an aborted reservation is handed back once no later reservation depends on it', async () => {
    const clock = new ManualClock()
    const leak = leakyBucket({ limit: 100, clock })
    leak.tryAcquire()
    const first = new AbortController()
    const a = track(leak.acquire(1, { signal: first.signal }))
    const b = record(clock, [leak.acquire()])
    const c = record(clock, [leak.acquire()])
    await clock.advanceAsync(3)
    expect(leak.retryAfterMs()).toBe(37)
    // a's slot (10 ms) cannot be reused: b and c are already scheduled behind it, and
    // giving it back would put a newcomer at 30 ms beside c.
    first.abort()
    await flush()
    expect(a.status).toBe('rejected')
    expect(leak.retryAfterMs()).toBe(37)
    await clock.advanceAsync(17)
    expect([b, c]).toEqual([[20], ['pending']])
    await clock.advanceAsync(10)
    expect(c).toEqual([30])
    // With nothing behind it, an aborted reservation returns its slot at once.
    const d = new AbortController()
    const waiting = leak.acquire(1, { signal: d.signal })
    expect(leak.retryAfterMs()).toBe(20)
    d.abort()
    await expect(waiting).rejects.toBeDefined()
    expect(leak.retryAfterMs()).toBe(10)
  })

  it('aborting every waiter, in any order, restores the schedule exactly', async () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 10, capacity: 2, clock })
    bucket.tryAcquire(2)
    const before = bucket.retryAfterMs()
    const controllers = Array.from({ length: 6 }, () => new AbortController())
    const waits = controllers.map((c, i) =>
      bucket.acquire(1 + (i % 2), { signal: c.signal }).catch(() => 'aborted'),
    )
    for (const i of [2, 0, 5, 1, 4, 3]) controllers[i]?.abort()
    expect(await Promise.all(waits)).toEqual(Array(6).fill('aborted'))
    expect(bucket.retryAfterMs()).toBe(before)
    expect(clock.pendingSleeps).toBe(0)
  })

  it('a refund while reservations stand cannot move their slots; it returns if they all cancel', async () => {
    const clock = new ManualClock()
    const leak = leakyBucket({ limit: 100, clock })
    leak.tryAcquire()
    const controller = new AbortController()
    const waiting = leak.acquire(1, { signal: controller.signal })
    expect(leak.retryAfterMs()).toBe(20)
    leak.refund()
    expect(leak.retryAfterMs()).toBe(20)
    controller.abort()
    await expect(waiting).rejects.toBeDefined()
    expect([leak.retryAfterMs(), leak.availablePermits()]).toEqual([0, 1])
  })

  it('warm-up reservations follow the shrinking interval', async () => {
    const clock = new ManualClock()
    const limiter = warmUpTokenBucket({ limit: 3, capacity: 1, warmUp: '1h', clock })
    const times = record(clock, [limiter.acquire(), limiter.acquire(), limiter.acquire()])
    await clock.advanceAsync(5000)
    expect(times[0]).toBe(0)
    expect(times[1]).toBe(1000)
    // The interval one second into the hour, in ticks of 1/3 µs: 3·T − floor(2·T·1 s / 1 h)
    // = 3,000,000 − 555, that is 999,815 µs.
    expect(times[2]).toBe(1999.815)
  })
})

describe('window waiting: a FIFO queue', () => {
  it('wakes the queue at each window; waiters resolve in order', async () => {
    const clock = new ManualClock()
    const window = fixedWindow({ limit: 2, window: 1000, clock })
    window.tryAcquire(2)
    const times = record(clock, [window.acquire(), window.acquire(), window.acquire()])
    await clock.advanceAsync(2500)
    expect(times).toEqual([1000, 1000, 2000])
    expect(clock.pendingSleeps).toBe(0)
  })

  it('tryAcquire refuses while anyone waits, even with room left (no starvation)', async () => {
    const clock = new ManualClock()
    const window = fixedWindow({ limit: 2, window: 1000, clock })
    window.tryAcquire()
    const big = track(window.acquire(2))
    await flush()
    expect(window.tryAcquire()).toBe(false)
    expect(window.availablePermits()).toBe(0)
    await clock.advanceAsync(1000)
    expect(big.status).toBe('resolved')
    expect(window.availablePermits()).toBe(0)
  })

  it('rejects a waiter as soon as it is known to miss its deadline', async () => {
    const clock = new ManualClock()
    const window = fixedWindow({ limit: 1, window: 1000, clock })
    window.tryAcquire()
    const a = track(window.acquire())
    const b = track(window.acquire(1, { timeout: 1500 }))
    await clock.advanceAsync(1000)
    expect([a.status, b.status]).toEqual(['resolved', 'rejected'])
    expect(b.reason).toMatchObject({ code: 'ERR_SLUICE_TIMEOUT', retryAfterMs: 1000 })
    expect(clock.now()).toBe(1000)
    expect(clock.pendingSleeps).toBe(0)
  })

  it('a waiter stuck behind the head times out at its deadline', async () => {
    const clock = new ManualClock()
    const window = slidingWindow({ limit: 2, window: 1000, slots: 10, clock })
    window.tryAcquire()
    const head = record(clock, [window.acquire(2)])
    const behind = record(clock, [window.acquire(1, { timeout: 300 })])
    await clock.advanceAsync(299)
    expect(behind).toEqual(['pending'])
    await clock.advanceAsync(1)
    expect(behind).toEqual(['ERR_SLUICE_TIMEOUT'])
    await clock.advanceAsync(2000)
    expect(head).toEqual([1100])
  })

  it('aborting the head lets the next waiter in at once', async () => {
    const clock = new ManualClock()
    const window = fixedWindow({ limit: 2, window: 1000, clock })
    window.tryAcquire()
    const controller = new AbortController()
    const head = track(window.acquire(2, { signal: controller.signal }))
    const next = track(window.acquire())
    await flush()
    expect(next.status).toBe('pending')
    controller.abort()
    await flush()
    expect([head.status, next.status]).toEqual(['rejected', 'resolved'])
    expect(clock.pendingSleeps).toBe(0)
  })

  it('a refund serves the head without waiting for the window', async () => {
    const clock = new ManualClock()
    const window = slidingWindow({ limit: 2, window: 1000, clock })
    window.tryAcquire(2)
    const waiting = track(window.acquire())
    await flush()
    window.refund()
    await flush()
    expect(waiting.status).toBe('resolved')
    expect(clock.pendingSleeps).toBe(0)
  })
})

describe('acquire input', () => {
  it.each(factories)('%s rejects bad permits and options', async (name, create) => {
    const limiter = create(new ManualClock())
    await expect(limiter.acquire(0)).rejects.toThrow(
      new RangeError(`${name}.acquire: "permits" must be a positive integer, got 0`),
    )
    await expect(limiter.acquire(1, 5000 as never)).rejects.toThrow(
      new TypeError(`${name}.acquire: options must be an object, got 5000`),
    )
    await expect(limiter.acquire(1, { timeout: '5 s' as never })).rejects.toThrow(
      new RangeError(
        `${name}.acquire: "timeout" must be a duration (milliseconds as a non-negative number, or a string such as '250ms', '1.5s', '5m', '2h', '1d'), got "5 s" (did you mean '5s'?)`,
      ),
    )
    await expect(limiter.acquire(1, { signal: {} as never })).rejects.toThrow(
      new TypeError(`${name}.acquire: "signal" must be an AbortSignal, got an object`),
    )
  })
})
