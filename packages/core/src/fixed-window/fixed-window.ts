import { type AlgorithmDefinition, buildLimiter } from '../algorithm'
import type { Quota } from '../kernel'
import { invalidPermits, isPermitCount, nudge } from '../options'
import type {
  Clock,
  CompactRateLimiter,
  FixedWindowOptions,
  NormalizedSpec,
  PortableRateLimiter,
  RateLimiter,
  WaitOptions,
} from '../types'
import { readPositiveDuration, readPositiveInteger } from '../validation'
import { type Waitable, WaitQueue } from '../wait-queue'

type FixedWindowSpec = Extract<NormalizedSpec, { algorithm: 'fixed-window' }>

export class FixedWindowLimiter implements CompactRateLimiter, PortableRateLimiter, Waitable {
  readonly freshState = -1
  readonly name: string
  readonly limit: number
  readonly windowMs: number
  private readonly clock: Clock
  // The window counted in and its count: the whole state. The keyed kernel (`keyed.ts`)
  // keeps both per key in a slab and sets them here to decide for a key.
  window = Number.NEGATIVE_INFINITY
  count = 0
  private readonly queue: WaitQueue
  /**
   * Compact state is `(window mod cycle) · (limit + 1) + count`: only the current window's
   * count matters, so the window number is kept modulo the largest cycle that keeps the
   * product a safe integer (millions of windows even at a limit of 2^31).
   */
  private readonly cycle: number

  constructor(name: string, clock: Clock, limit: number, windowMs: number) {
    this.name = name
    this.clock = clock
    this.limit = limit
    this.windowMs = windowMs
    this.queue = new WaitQueue(this, clock)
    this.cycle = Math.floor(Number.MAX_SAFE_INTEGER / (limit + 1))
  }

  saveState(): number {
    if (this.count === 0) return this.freshState
    const residue = ((this.window % this.cycle) + this.cycle) % this.cycle
    return residue * (this.limit + 1) + this.count
  }

  loadState(state: number): void {
    const window = Math.floor(this.clock.now() / this.windowMs)
    const residue = Math.floor(state / (this.limit + 1))
    // A count saved in an earlier window (whose residue differs) has expired.
    const current = state >= 0 && residue === ((window % this.cycle) + this.cycle) % this.cycle
    this.window = current ? window : Number.NEGATIVE_INFINITY
    this.count = current ? state - residue * (this.limit + 1) : 0
  }

  /** `[window, count]`: the window's number and what was taken in it. */
  exportState(): number[] {
    return [this.window, this.count]
  }

  importState(state: readonly number[]): void {
    this.window = state[0] ?? Number.NEGATIVE_INFINITY
    this.count = state[1] ?? 0
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits('fixedWindow.tryAcquire', permits)
    }
    // Queued waiters go first (FIFO): a stream of tryAcquire calls cannot starve them.
    if (this.queue.size !== 0) return false
    return this.take(permits)
  }

  take(permits: number): boolean {
    // Windows are aligned to the clock's zero, so every limiter agrees where they start.
    const window = Math.floor(this.clock.now() / this.windowMs)
    if (window !== this.window) {
      this.window = window
      this.count = 0
    }
    if (this.count + permits > this.limit) return false
    this.count += permits
    return true
  }

  private usedAt(ms: number): number {
    return Math.floor(ms / this.windowMs) === this.window ? this.count : 0
  }

  availablePermits(): number {
    if (this.queue.size !== 0) return 0
    return this.limit - this.usedAt(this.clock.now())
  }

  retryAfterMs(permits = 1): number {
    if (!isPermitCount(permits)) throw invalidPermits('fixedWindow.retryAfterMs', permits)
    if (permits > this.limit) return Number.POSITIVE_INFINITY
    return this.delay(permits)
  }

  /**
   * What a store reports after a decision for `permits`, in one pass at one reading of
   * the clock: `availablePermits()`, `retryAfterMs(available + 1)` (0 when the window is
   * unused) and, for a refusal, `retryAfterMs(permits)`.
   */
  quota(permits: number, allowed: boolean, out: Quota): void {
    const available = this.availablePermits()
    out.available = available
    out.resetMs = available < this.limit ? this.delay(available + 1) : 0
    out.retryAfterMs = allowed
      ? 0
      : permits > this.limit
        ? Number.POSITIVE_INFINITY
        : this.delay(permits)
  }

  delay(permits: number): number {
    const ms = this.clock.now()
    return this.usedAt(ms) + permits <= this.limit ? 0 : this.untilNextWindow(ms)
  }

  private untilNextWindow(ms: number): number {
    const next = Math.floor(ms / this.windowMs) + 1
    let delay = next * this.windowMs - ms
    for (let attempt = 0; attempt < 64 && Math.floor((ms + delay) / this.windowMs) < next; ) {
      delay = nudge(ms, delay, attempt++)
    }
    return delay
  }

  resetMs(): number {
    const ms = this.clock.now()
    return this.usedAt(ms) > 0 ? this.untilNextWindow(ms) : 0
  }

  receipt(): number {
    return this.window
  }

  refund(permits = 1, receipt?: number): void {
    if (!isPermitCount(permits)) throw invalidPermits('fixedWindow.refund', permits)
    if (this.usedAt(this.clock.now()) === 0) return
    // Permits of an earlier window stopped counting when it ended.
    if (receipt !== undefined && receipt !== this.window) return
    this.count = this.count > permits ? this.count - permits : 0
    if (this.queue.size !== 0) this.queue.drain()
  }

  acquire(permits = 1, options?: WaitOptions): Promise<void> {
    return this.queue.acquire('fixedWindow.acquire', permits, options, this.limit)
  }
}

/** The fixed window's entry in the algorithm registry. */
export const fixedWindowAlgorithm: AlgorithmDefinition<FixedWindowSpec> = {
  algorithm: 'fixed-window',
  factory: 'fixedWindow',
  timed: true,
  options: ['limit', 'window'],
  normalize(options, label, prefix = '') {
    return {
      algorithm: 'fixed-window',
      limit: readPositiveInteger(label, `${prefix}limit`, options.limit),
      window: readPositiveDuration(label, `${prefix}window`, options.window, '1s'),
    }
  },
  create(spec, name, clock) {
    return new FixedWindowLimiter(name, clock, spec.limit, spec.window)
  },
}

/**
 * A fixed window: at most `limit` permits per `window` (default `'1s'`), windows aligned
 * to the clock's zero, one counter. The cheapest limiter, with a known weakness: a
 * client can spend `limit` just before a boundary and `limit` again just after it, so
 * up to 2·limit pass within a short span. Use `slidingWindow` if clients would exploit it.
 *
 * `acquire` waits in a FIFO queue; while anyone waits, `tryAcquire` refuses and
 * `availablePermits()` reports 0.
 *
 * @example
 * ```ts
 * const perSecond = fixedWindow({ limit: 1000 })
 * perSecond.tryAcquire() // true until 1000 permits were taken in this second
 * ```
 */
export function fixedWindow(options: FixedWindowOptions): RateLimiter {
  return buildLimiter(fixedWindowAlgorithm, options) as RateLimiter
}
