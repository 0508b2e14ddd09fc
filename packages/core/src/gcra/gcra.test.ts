import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../clock'
import { leakyBucket } from '../leaky-bucket/leaky-bucket'
import { tokenBucket } from '../token-bucket/token-bucket'
import type { RateLimiter } from '../types'
import { warmUpTokenBucket } from '../warm-up/warm-up-token-bucket'

/**
 * GCRA on exact integers, in BigInt: time in ticks of 1/limit µs, so T = window (µs) and
 * τ = capacity·T, and every answer (admitted, available, the wait) follows with no
 * rounding at all. Waits are whole microseconds, rounded up.
 */
class ExactGcra {
  private tat: bigint | undefined
  private readonly limit: bigint
  private readonly window: bigint
  private readonly tau: bigint

  constructor(limit: number, windowMs: number, capacity: number) {
    this.limit = BigInt(limit)
    this.window = BigInt(Math.round(windowMs * 1000))
    this.tau = BigInt(capacity) * this.window
  }

  private ticks(nowMs: number): bigint {
    return BigInt(Math.round(nowMs * 1000)) * this.limit
  }

  tryAcquire(nowMs: number, permits: number): boolean {
    const now = this.ticks(nowMs)
    const start = this.tat !== undefined && this.tat > now ? this.tat : now
    const next = start + BigInt(permits) * this.window
    if (next - now > this.tau) return false
    this.tat = next
    return true
  }

  available(nowMs: number): number {
    const now = this.ticks(nowMs)
    const debt = this.tat !== undefined && this.tat > now ? this.tat - now : 0n
    const free = (this.tau - debt) / this.window
    return Number(free > 0n ? free : 0n)
  }

  /** Milliseconds until `permits` fit: the excess in ticks, as whole µs rounded up. */
  retryAfterMs(nowMs: number, permits: number): number {
    const now = this.ticks(nowMs)
    const start = this.tat !== undefined && this.tat > now ? this.tat : now
    const excess = start + BigInt(permits) * this.window - now - this.tau
    if (excess <= 0n) return 0
    return Number((excess + this.limit - 1n) / this.limit) / 1000
  }
}

const config = fc.record({
  limit: fc.integer({ min: 1, max: 50 }),
  window: fc.constantFrom(1, 3, 7, 100, 333, 1000, 3000, 60_000),
  capacity: fc.integer({ min: 1, max: 12 }),
  start: fc.constantFrom(0, 1, 999_999, 2 ** 31),
})
const arrivals = fc.array(
  fc.record({ dt: fc.integer({ min: 0, max: 400 }), permits: fc.integer({ min: 1, max: 14 }) }),
  { minLength: 1, maxLength: 120 },
)

type Admission = { t: number; permits: number }

/** Largest count admitted in any [t_i, t_j] minus the GCRA bound capacity + (t_j − t_i)/T. */
function worstExcess(admitted: Admission[], capacity: number, intervalMs: number): number {
  let worst = Number.NEGATIVE_INFINITY
  for (let i = 0; i < admitted.length; i++) {
    let count = 0
    for (let j = i; j < admitted.length; j++) {
      const a = admitted[i] as Admission
      const b = admitted[j] as Admission
      count += b.permits
      worst = Math.max(worst, count - (capacity + (b.t - a.t) / intervalMs))
    }
  }
  return worst
}

function run(limiter: RateLimiter, clock: ManualClock, steps: { dt: number; permits: number }[]) {
  const admitted: Admission[] = []
  for (const { dt, permits } of steps) {
    clock.advance(dt)
    if (limiter.tryAcquire(permits)) admitted.push({ t: clock.now(), permits })
  }
  return admitted
}

describe('GCRA family properties', () => {
  it('tokenBucket decides exactly as integer GCRA, permit for permit', () => {
    fc.assert(
      fc.property(config, arrivals, ({ limit, window, capacity, start }, steps) => {
        const clock = new ManualClock(start)
        const bucket = tokenBucket({ limit, window, capacity, clock })
        const model = new ExactGcra(limit, window, capacity)
        for (const { dt, permits } of steps) {
          clock.advance(dt)
          expect(bucket.tryAcquire(permits)).toBe(model.tryAcquire(clock.now(), permits))
          expect(bucket.availablePermits()).toBe(model.available(clock.now()))
        }
      }),
      { numRuns: 300 },
    )
  })

  // A bandwidth quota (10 GB a day) or an organisation's LLM tokens (10^9 a day): τ in
  // ticks is far past 2^53 (8.64·10^20 for 10^10 a day), and still exact.
  it('tokenBucket is exact across the whole accepted range, 10^10 a day included', () => {
    const huge = fc.record({
      limit: fc.constantFrom(1e9, 1e10, 2 ** 40, 3, 7, 2 ** 53 - 1),
      window: fc.constantFrom(86_400_000, 3_600_000, 100, 30 * 86_400_000),
      fraction: fc.constantFrom(1, 0.5, 0.001, 1e-6),
      start: fc.constantFrom(0, 1.5, 1_700_000_000_000),
    })
    const costs = fc.array(
      fc.record({
        dt: fc.integer({ min: 0, max: 10_000_000 }),
        share: fc.double({ min: 0, max: 1.2, noNaN: true }),
      }),
      { minLength: 1, maxLength: 60 },
    )
    fc.assert(
      fc.property(huge, costs, ({ limit, window, fraction, start }, steps) => {
        const capacity = Math.max(1, Math.floor(limit * fraction))
        if ((capacity * window * 1000) / limit > Number.MAX_SAFE_INTEGER) return
        const clock = new ManualClock(start)
        const bucket = tokenBucket({ limit, window, capacity, clock })
        const model = new ExactGcra(limit, window, capacity)
        for (const { dt, share } of steps) {
          clock.advance(dt)
          const permits = Math.max(1, Math.floor(capacity * share))
          expect(bucket.retryAfterMs(permits)).toBe(
            permits > capacity
              ? Number.POSITIVE_INFINITY
              : model.retryAfterMs(clock.now(), permits),
          )
          expect(bucket.tryAcquire(permits)).toBe(model.tryAcquire(clock.now(), permits))
          expect(bucket.availablePermits()).toBe(model.available(clock.now()))
        }
      }),
      { numRuns: 300 },
    )
  })

  it('leakyBucket decides exactly as integer GCRA with capacity 1', () => {
    fc.assert(
      fc.property(config, arrivals, ({ limit, window, start }, steps) => {
        const clock = new ManualClock(start)
        const leak = leakyBucket({ limit, window, clock })
        const model = new ExactGcra(limit, window, 1)
        for (const { dt, permits } of steps) {
          clock.advance(dt)
          expect(leak.tryAcquire(permits)).toBe(model.tryAcquire(clock.now(), permits))
        }
      }),
      { numRuns: 200 },
    )
  })

  it('admitted ≤ capacity + limit·elapsed/window in every interval, for fractional times too', () => {
    const fractionalArrivals = fc.array(
      fc.record({
        dt: fc.double({ min: 0, max: 300, noNaN: true }),
        permits: fc.integer({ min: 1, max: 5 }),
      }),
      { minLength: 1, maxLength: 80 },
    )
    fc.assert(
      fc.property(
        config,
        fractionalArrivals,
        fc.constantFrom('token', 'leaky', 'warm-up'),
        ({ limit, window, capacity, start }, steps, kind) => {
          const clock = new ManualClock(start)
          const limiter =
            kind === 'token'
              ? tokenBucket({ limit, window, capacity, clock })
              : kind === 'leaky'
                ? leakyBucket({ limit, window, clock })
                : warmUpTokenBucket({ limit, window, capacity, warmUp: 5000, clock })
          const burst = kind === 'leaky' ? 1 : capacity
          const admitted = run(limiter, clock, steps)
          // Tolerance far below one permit: only float noise, never a whole permit.
          expect(worstExcess(admitted, burst, window / limit)).toBeLessThanOrEqual(1e-6)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('refund never lifts availablePermits above capacity, nor admits more than capacity at once', () => {
    const ops = fc.array(
      fc.oneof(
        fc.record({ op: fc.constant('take' as const), n: fc.integer({ min: 1, max: 6 }) }),
        fc.record({ op: fc.constant('refund' as const), n: fc.integer({ min: 1, max: 20 }) }),
        fc.record({ op: fc.constant('advance' as const), n: fc.integer({ min: 0, max: 500 }) }),
      ),
      { maxLength: 100 },
    )
    fc.assert(
      fc.property(config, ops, fc.boolean(), ({ limit, window, capacity }, steps, warm) => {
        const clock = new ManualClock()
        const limiter = warm
          ? warmUpTokenBucket({ limit, window, capacity, warmUp: 1000, clock })
          : tokenBucket({ limit, window, capacity, clock })
        for (const { op, n } of steps) {
          if (op === 'take') limiter.tryAcquire(n)
          else if (op === 'refund') limiter.refund(n)
          else clock.advance(n)
          expect(limiter.availablePermits()).toBeLessThanOrEqual(capacity)
        }
        let burst = 0
        while (burst <= capacity && limiter.tryAcquire()) burst++
        expect(burst).toBeLessThanOrEqual(capacity)
      }),
      { numRuns: 300 },
    )
  })

  it('advancing by retryAfterMs(n) always admits n', () => {
    fc.assert(
      fc.property(
        config,
        arrivals,
        fc.integer({ min: 1, max: 12 }),
        fc.boolean(),
        ({ limit, window, capacity, start }, steps, n, warm) => {
          const clock = new ManualClock(start + 0.1)
          const limiter = warm
            ? warmUpTokenBucket({ limit, window, capacity, warmUp: 2000, clock })
            : tokenBucket({ limit, window, capacity, clock })
          run(limiter, clock, steps)
          const retry = limiter.retryAfterMs(n)
          if (n > capacity) {
            expect(retry).toBe(Number.POSITIVE_INFINITY)
            return
          }
          clock.advance(retry)
          expect(limiter.tryAcquire(n)).toBe(true)
        },
      ),
      { numRuns: 300 },
    )
  })
})
