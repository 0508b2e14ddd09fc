import { describe, expect, it } from 'vitest'
import { flush } from '../test/helpers'
import { ManualClock } from './clock'
import { concurrency } from './concurrency/concurrency'
import { RateLimitError } from './errors'
import { fixedWindow } from './fixed-window/fixed-window'
import { leakyBucket } from './leaky-bucket/leaky-bucket'
import { slidingWindow } from './sliding-window/sliding-window'
import { tokenBucket } from './token-bucket/token-bucket'
import type { Permit, RateLimiter } from './types'
import { warmUpTokenBucket } from './warm-up/warm-up-token-bucket'

/** mulberry32: a small seeded generator, so a failure replays exactly. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

type Outcome = 'pending' | 'granted' | 'timeout' | 'aborted' | 'limited' | 'full'

function classify(error: unknown): Outcome {
  if (error === 'abort') return 'aborted'
  if (error instanceof RateLimitError) {
    if (error.code === 'ERR_SLUICE_TIMEOUT') return 'timeout'
    if (error.code === 'ERR_SLUICE_QUEUE_FULL') return 'full'
    return 'limited'
  }
  throw error
}

describe('soak (ManualClock, seeded)', () => {
  it.each([1, 2, 3])(
    'concurrency: 4,000 mixed enter/abort/timeout/release, seed %d',
    async (seed) => {
      const next = random(seed)
      const clock = new ManualClock()
      const bulkhead = concurrency({ max: 4, maxQueue: 40, clock })
      const held: Permit[] = []
      const controllers: AbortController[] = []
      const outcomes: Outcome[] = []
      let granted = 0
      let released = 0

      for (let op = 0; op < 4000; op++) {
        const roll = next()
        if (roll < 0.45) {
          const controller = new AbortController()
          controllers.push(controller)
          const index = outcomes.push('pending') - 1
          const timeout = next() < 0.5 ? { timeout: Math.floor(next() * 300) } : {}
          bulkhead
            .enter({ ...timeout, signal: controller.signal, permits: 1 + Math.floor(next() * 3) })
            .then(
              (permit) => {
                outcomes[index] = 'granted'
                granted += permit.permits
                held.push(permit)
              },
              (error: unknown) => {
                outcomes[index] = classify(error)
              },
            )
        } else if (roll < 0.7 && held.length > 0) {
          const permit = held.splice(Math.floor(next() * held.length), 1)[0] as Permit
          released += permit.permits
          if (next() < 0.5) permit.release()
          else permit[Symbol.dispose]()
        } else if (roll < 0.8 && controllers.length > 0) {
          controllers[Math.floor(next() * controllers.length)]?.abort('abort')
        } else {
          await clock.advanceAsync(Math.floor(next() * 50))
        }
        // The books balance at every step, once callbacks have run.
        await flush()
        const holding = held.reduce((sum, permit) => sum + permit.permits, 0)
        expect(bulkhead.inFlight).toBe(granted - released)
        expect(bulkhead.inFlight).toBe(holding)
        expect(bulkhead.inFlight).toBeLessThanOrEqual(4)
        expect(bulkhead.queued).toBeLessThanOrEqual(40)
      }

      // Wind down: release everything, let every remaining waiter finish or time out.
      for (let round = 0; round < 1000 && (held.length > 0 || bulkhead.queued > 0); round++) {
        for (const permit of held.splice(0)) {
          released += permit.permits
          permit.release()
        }
        await clock.advanceAsync(1000)
      }
      for (const controller of controllers) controller.abort('abort')
      await clock.advanceAsync(1000)

      expect(outcomes.filter((o) => o === 'pending')).toEqual([])
      expect(new Set(outcomes)).toEqual(new Set(['granted', 'timeout', 'aborted', 'full']))
      expect([bulkhead.inFlight, bulkhead.queued, clock.pendingSleeps]).toEqual([0, 0, 0])
      expect(granted).toBe(released)
    },
  )

  // (name, factory, the algorithm's guarantee, largest request it can hold)
  const rateLimiters: [
    string,
    (clock: ManualClock) => RateLimiter,
    (grants: Grant[]) => void,
    number,
  ][] = [
    ['tokenBucket', (clock) => tokenBucket({ limit: 20, capacity: 5, clock }), gcraBound(5, 50), 3],
    ['leakyBucket', (clock) => leakyBucket({ limit: 20, clock }), gcraBound(1, 50), 1],
    [
      'warmUpTokenBucket',
      (clock) => warmUpTokenBucket({ limit: 20, capacity: 5, warmUp: '10s', clock }),
      gcraBound(5, 50),
      3,
    ],
    [
      'slidingWindow',
      (clock) => slidingWindow({ limit: 5, window: 250, clock }),
      rollingBound(5, 250),
      3,
    ],
    [
      'fixedWindow',
      (clock) => fixedWindow({ limit: 5, window: 250, clock }),
      alignedBound(5, 250),
      3,
    ],
  ]

  it.each(rateLimiters)(
    '%s: 4,000 mixed acquire/abort/timeout/tryAcquire/refund',
    async (_, create, bound, most) => {
      const next = random(7)
      const clock = new ManualClock()
      const limiter = create(clock)
      const controllers: AbortController[] = []
      const outcomes: Outcome[] = []
      const grants: Grant[] = []

      for (let op = 0; op < 4000; op++) {
        const roll = next()
        const permits = 1 + Math.floor(next() * most)
        if (roll < 0.4) {
          const controller = new AbortController()
          controllers.push(controller)
          const index = outcomes.push('pending') - 1
          const timeout = next() < 0.7 ? { timeout: Math.floor(next() * 800) } : {}
          limiter.acquire(permits, { ...timeout, signal: controller.signal }).then(
            () => {
              outcomes[index] = 'granted'
              grants.push({ t: clock.now(), permits })
            },
            (error: unknown) => {
              outcomes[index] = classify(error)
            },
          )
        } else if (roll < 0.55) {
          if (limiter.tryAcquire(permits)) grants.push({ t: clock.now(), permits })
        } else if (roll < 0.6 && grants.at(-1)?.t === clock.now()) {
          // Outcome-based counting: the call just granted failed, hand its permits back.
          const last = grants.pop() as Grant
          limiter.refund(last.permits)
        } else if (roll < 0.7 && controllers.length > 0) {
          controllers[Math.floor(next() * controllers.length)]?.abort('abort')
        } else {
          await clock.advanceAsync(Math.floor(next() * 40))
        }
      }
      for (let round = 0; round < 100 && outcomes.includes('pending'); round++) {
        await clock.advanceAsync(1000)
      }

      expect(outcomes.filter((o) => o === 'pending')).toEqual([])
      expect(new Set(outcomes)).toEqual(new Set(['granted', 'timeout', 'aborted']))
      expect(clock.pendingSleeps).toBe(0)
      // Every permit granted is within the algorithm's guarantee...
      bound(grants)
      // ...and nothing was left taken: once reset, the limiter is fresh.
      await clock.advanceAsync(limiter.resetMs())
      expect(limiter.resetMs()).toBe(0)
      expect(limiter.retryAfterMs(limiter.availablePermits())).toBe(0)
    },
  )
})

interface Grant {
  t: number
  permits: number
}

/** GCRA: in any [a, b], granted ≤ burst + (b − a)/T. */
function gcraBound(burst: number, intervalMs: number) {
  return (grants: Grant[]) => {
    for (let i = 0; i < grants.length; i++) {
      let count = 0
      for (let j = i; j < grants.length; j++) {
        const a = grants[i] as Grant
        const b = grants[j] as Grant
        count += b.permits
        expect(count).toBeLessThanOrEqual(burst + (b.t - a.t) / intervalMs + 1e-9)
      }
    }
  }
}

/** Sliding window: any [t, t + window) holds ≤ limit. */
function rollingBound(limit: number, windowMs: number) {
  return (grants: Grant[]) => {
    for (let i = 0; i < grants.length; i++) {
      let count = 0
      const from = (grants[i] as Grant).t
      for (let j = i; j < grants.length && (grants[j] as Grant).t < from + windowMs; j++) {
        count += (grants[j] as Grant).permits
      }
      expect(count).toBeLessThanOrEqual(limit)
    }
  }
}

/** Fixed window: each aligned window holds ≤ limit. */
function alignedBound(limit: number, windowMs: number) {
  return (grants: Grant[]) => {
    const perWindow = new Map<number, number>()
    for (const { t, permits } of grants) {
      const window = Math.floor(t / windowMs)
      perWindow.set(window, (perWindow.get(window) ?? 0) + permits)
    }
    for (const count of perWindow.values()) expect(count).toBeLessThanOrEqual(limit)
  }
}
