import { neverError, RateLimitError } from '../errors'
import type { Quota } from '../kernel'
import { invalidPermits, isPermitCount, nudge, readWaitOptions } from '../options'
import type { Clock, CompactRateLimiter, PortableRateLimiter, WaitOptions } from '../types'
import { rangeError, readPositiveDuration } from '../validation'

/**
 * The `window` of a GCRA limiter (default `'1s'`). The kernel counts `largest × window`
 * ticks (τ = capacity·T with T = window in ticks), which must stay an exact integer: a
 * window so long that the product passes 2^53 would silently admit everything.
 */
export function readGcraWindow(
  label: string,
  prefix: string,
  value: unknown,
  largest: number,
): number {
  const window = readPositiveDuration(label, `${prefix}window`, value, '1s')
  if (largest * window > Number.MAX_SAFE_INTEGER) {
    throw rangeError(
      label,
      `${prefix}window`,
      `in milliseconds times the limit or capacity (${largest}) must be at most 2^53 so counting stays exact`,
      value,
    )
  }
  return window
}

/** What every GCRA limiter is built from, already validated. */
export interface GcraConfig {
  /** Factory name, for error messages. */
  factory: string
  name: string
  clock: Clock
  limit: number
  windowMs: number
  capacity: number
}

/**
 * The generic cell rate algorithm (virtual scheduling) shared by token bucket, leaky
 * bucket and warm-up: the whole state is `tat`, the theoretical arrival time of the next
 * permit. A request for n permits is admitted iff `(max(tat, now) − now) + n·T ≤ τ`.
 *
 * Time is counted in ticks of `1/limit` ms, so the steady emission interval T is exactly
 * `windowMs` ticks and τ = capacity·windowMs: integers for any integral config. That is
 * what lets "3 per second" or "7 per 100 ms" admit exactly `capacity` from full, where
 * T = 333.33… ms in floating point would drift and lose the last permit.
 *
 * Waiting is by reservation (like Go's x/time/rate `Reserve`): `acquire` moves `tat`
 * forward at once and sleeps until its own slot, so every caller waits for its own
 * permits and later callers queue behind it.
 */
export abstract class GcraLimiter implements PortableRateLimiter {
  readonly name: string
  readonly limit: number
  readonly windowMs: number
  /** Largest burst, in permits. */
  readonly capacity: number
  protected readonly clock: Clock
  protected readonly factory: string
  /** Ticks per millisecond (= limit). */
  protected readonly scale: number
  /** Steady emission interval T in ticks (= windowMs). */
  protected readonly steady: number
  /**
   * Tolerance for rounding, far below one tick: only non-integral windows (such as
   * '0.1ms') or the warm-up ramp produce fractions, and those must not cost a permit.
   */
  protected readonly slack: number
  /**
   * The theoretical arrival time, in ticks: the whole state outside of waits. Read and
   * written directly by the keyed kernels (`keyed.ts`) that keep it per key in a slab.
   */
  tat = Number.NEGATIVE_INFINITY
  /** Reservations of waiting `acquire` calls, in slot order. */
  private readonly reservations: Reservation[] = []

  constructor(config: GcraConfig) {
    this.factory = config.factory
    this.name = config.name
    this.clock = config.clock
    this.limit = config.limit
    this.windowMs = config.windowMs
    this.capacity = config.capacity
    this.scale = config.limit
    this.steady = config.windowMs
    this.slack = config.windowMs * 1e-9
  }

  abstract tryAcquire(permits?: number): boolean

  /** Emission interval in ticks at time `ms`. */
  protected abstract intervalAt(ms: number): number
  /** Burst tolerance τ in ticks at time `ms`, without slack. */
  protected abstract toleranceAt(ms: number): number
  /** Milliseconds from `ms` until `permits` (≤ capacity) would be admitted. */
  protected abstract delayAt(ms: number, permits: number): number

  /** Rounding allowance at tick time `now`; the constant kernel's arithmetic is exact. */
  protected roundingAt(_now: number): number {
    return this.slack
  }

  protected admitsAt(ms: number, permits: number): boolean {
    const now = ms * this.scale
    const start = Math.max(this.tat, now)
    return (
      start + permits * this.intervalAt(ms) - now <= this.toleranceAt(ms) + this.roundingAt(now)
    )
  }

  /** Rounds `delay` up until `admitsAt(ms + delay)` holds, as the clock will compute it. */
  protected settleDelay(ms: number, delay: number, permits: number): number {
    let settled = delay
    for (let attempt = 0; attempt < 64 && !this.admitsAt(ms + settled, permits); attempt++) {
      settled = nudge(ms, settled, attempt)
    }
    return settled
  }

  availablePermits(): number {
    const ms = this.clock.now()
    const now = ms * this.scale
    const debt = this.tat > now ? this.tat - now : 0
    const free = Math.floor(
      (this.toleranceAt(ms) + this.roundingAt(now) - debt) / this.intervalAt(ms),
    )
    return free <= 0 ? 0 : Math.min(free, this.capacity)
  }

  retryAfterMs(permits = 1): number {
    if (!isPermitCount(permits)) throw invalidPermits(`${this.factory}.retryAfterMs`, permits)
    if (permits > this.capacity) return Number.POSITIVE_INFINITY
    return this.delayAt(this.clock.now(), permits)
  }

  /**
   * What a store reports after a decision for `permits`, in one pass at one reading of
   * the clock: `availablePermits()`, `retryAfterMs(available + 1)` (0 when that can never
   * pass: the bucket is full) and, for a refusal, `retryAfterMs(permits)`.
   */
  quota(permits: number, allowed: boolean, out: Quota): void {
    const ms = this.clock.now()
    this.report(ms, this.availablePermits(), permits, allowed, out)
  }

  /** Fills `out` at `ms` for a decision on `permits` that left `available` (see {@link quota}). */
  protected report(
    ms: number,
    available: number,
    permits: number,
    allowed: boolean,
    out: Quota,
  ): void {
    out.available = available
    out.resetMs = available < this.capacity ? this.delayAt(ms, available + 1) : 0
    out.retryAfterMs = allowed
      ? 0
      : permits > this.capacity
        ? Number.POSITIVE_INFINITY
        : this.delayAt(ms, permits)
  }

  resetMs(): number {
    const ms = this.clock.now()
    const debt = this.tat - ms * this.scale
    if (debt <= 0) return 0
    let delay = debt / this.scale
    for (let attempt = 0; attempt < 64 && this.tat > (ms + delay) * this.scale; attempt++) {
      delay = nudge(ms, delay, attempt)
    }
    return delay
  }

  /** `[tat]`: the theoretical arrival time, in ticks. */
  exportState(): number[] {
    return [this.tat]
  }

  importState(state: readonly number[]): void {
    this.tat = state[0] ?? Number.NEGATIVE_INFINITY
  }

  receipt(): number {
    return this.tat
  }

  refund(permits = 1, receipt?: number): void {
    if (!isPermitCount(permits)) throw invalidPermits(`${this.factory}.refund`, permits)
    const ms = this.clock.now()
    const now = ms * this.scale
    let cost = permits * this.intervalAt(ms)
    // The receipt is `tat` just after the take. The bucket drains its debt oldest first,
    // so of the permits taken then, only the part of their debt not yet drained by now
    // (receipt − now) still counts; giving back more would credit permits taken since.
    if (receipt !== undefined) cost = Math.min(cost, Math.max(0, receipt - now))
    if (cost <= 0) return
    if (this.reservations.length !== 0) {
      // Waiters hold the tail of the schedule and the refunded permits sit before their
      // slots: moving `tat` back would let a newcomer share a waiter's slot. The refund
      // is a hole ahead of them, returned only if every one of them is cancelled.
      this.reservations.unshift({ cost, cancelled: true })
      return
    }
    // Never earlier than now: a refund restores at most a fresh bucket, never more.
    this.tat = Math.max(this.tat - cost, now)
  }

  async acquire(permits = 1, options?: WaitOptions): Promise<void> {
    const method = `${this.factory}.acquire`
    if (!isPermitCount(permits)) throw invalidPermits(method, permits)
    const { timeoutMs, signal } = readWaitOptions(method, options)
    signal?.throwIfAborted()
    if (permits > this.capacity) throw neverError(this.name, permits, this.capacity)
    const ms = this.clock.now()
    const delay = this.delayAt(ms, permits)
    if (delay > timeoutMs) {
      throw new RateLimitError('ERR_SLUICE_TIMEOUT', {
        limiter: this.name,
        retryAfterMs: delay,
        message: `${this.name}: ${permits} permit(s) not available within ${timeoutMs} ms (available in ${Math.ceil(delay)} ms)`,
      })
    }
    // Reserve now: tat moves as if admitted at `ms + delay`, so callers arriving later
    // (waiting or not) are scheduled after this one.
    const at = (ms + delay) * this.scale
    const reservation: Reservation = {
      cost: permits * this.intervalAt(ms + delay),
      cancelled: false,
    }
    this.tat = Math.max(this.tat, at) + reservation.cost
    if (delay === 0) return
    this.reservations.push(reservation)
    try {
      await this.clock.sleep(delay, signal)
    } catch (error) {
      this.cancel(reservation)
      throw error
    }
    this.settle(reservation)
  }

  /**
   * An aborted reservation is handed back only once no later reservation depends on it
   * (as in Go's x/time/rate `CancelAt`): later waiters were scheduled behind it, so
   * moving `tat` back while they stand would let a newcomer share their slot and break
   * the burst bound. Trailing cancelled reservations are popped, each returning its cost.
   */
  private cancel(reservation: Reservation): void {
    reservation.cancelled = true
    const now = this.clock.now() * this.scale
    for (let last = this.reservations.at(-1); last?.cancelled; last = this.reservations.at(-1)) {
      this.reservations.pop()
      this.tat = Math.max(this.tat - last.cost, now)
    }
  }

  /** A reservation whose time came; cancelled ones before it are in the past, so gone. */
  private settle(reservation: Reservation): void {
    const index = this.reservations.indexOf(reservation)
    if (index !== -1) this.reservations.splice(index, 1)
    while (this.reservations[0]?.cancelled) this.reservations.shift()
  }
}

interface Reservation {
  /** Ticks this reservation moved `tat` forward by. */
  readonly cost: number
  cancelled: boolean
}

/**
 * Token and leaky bucket: constant interval T and tolerance τ = capacity·T. Compact: the
 * state is `tat` alone.
 */
export class ConstantGcraLimiter extends GcraLimiter implements CompactRateLimiter {
  readonly freshState = Number.NEGATIVE_INFINITY
  private readonly tau: number
  private readonly tolerance: number

  constructor(config: GcraConfig) {
    super(config)
    this.tau = config.capacity * config.windowMs
    this.tolerance = this.tau + this.slack
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits(`${this.factory}.tryAcquire`, permits)
    }
    const now = this.clock.now() * this.scale
    const next = Math.max(this.tat, now) + permits * this.steady
    if (next - now > this.tolerance) return false
    this.tat = next
    return true
  }

  saveState(): number {
    return this.tat
  }

  /**
   * `GcraLimiter.quota` with this kernel's constants inlined (the same arithmetic, in the
   * same order): what a store computes on every decision.
   */
  override quota(permits: number, allowed: boolean, out: Quota): void {
    const ms = this.clock.now()
    const now = ms * this.scale
    const debt = this.tat > now ? this.tat - now : 0
    const free = Math.floor((this.tolerance - debt) / this.steady)
    this.report(ms, free <= 0 ? 0 : Math.min(free, this.capacity), permits, allowed, out)
  }

  protected override admitsAt(ms: number, permits: number): boolean {
    const now = ms * this.scale
    const start = Math.max(this.tat, now)
    return start + permits * this.steady - now <= this.tolerance
  }

  loadState(state: number): void {
    this.tat = state
  }

  protected intervalAt(): number {
    return this.steady
  }

  protected toleranceAt(): number {
    return this.tau
  }

  protected delayAt(ms: number, permits: number): number {
    const now = ms * this.scale
    const excess = Math.max(this.tat, now) + permits * this.steady - now - this.tau
    if (excess <= this.slack) return 0
    return this.settleDelay(ms, excess / this.scale, permits)
  }
}
