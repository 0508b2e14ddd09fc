import type { AlgorithmDefinition } from '../algorithm'
import { neverError, RateLimitError } from '../errors'
import { micros, mulDivMod, PAIR } from '../exact'
import { invalidPermits, isPermitCount, readWaitOptions } from '../options'
import { reconfigureKernel } from '../reconfigure'
import type {
  Clock,
  NormalizedSpec,
  RateLimiter,
  RateLimiterSpec,
  ReconfigureOptions,
  ReconfigureSpec,
  WaitOptions,
} from '../types'
import { rangeError, readWindow } from '../validation'
import type { GcraKernel } from './kernel'

type GcraSpec = Extract<NormalizedSpec, { algorithm: 'token-bucket' | 'leaky-bucket' | 'warm-up' }>

/**
 * The `window` of a GCRA limiter (default `'1s'`): whole microseconds, and short enough
 * that the burst budget τ = capacity·window/limit (`intervals` times it for a warm-up
 * bucket, whose cold interval is three warm ones) stays within 2^53 microseconds.
 */
export function readGcraWindow(
  label: string,
  prefix: string,
  value: unknown,
  limit: number,
  capacity: number,
  intervals = 1,
): number {
  const window = readWindow(label, `${prefix}window`, value, '1s')
  if ((intervals * capacity * window * 1000) / limit > Number.MAX_SAFE_INTEGER) {
    const times =
      intervals === 1
        ? `the capacity (${capacity})`
        : `${intervals} × the capacity (${intervals} × ${capacity})`
    throw rangeError(
      label,
      `${prefix}window`,
      `divided by the limit and times ${times} must be at most 2^53 microseconds`,
      value,
    )
  }
  return window
}

interface Reservation {
  /** Whole microseconds and ticks this reservation moved `tat` forward by. */
  us: number
  ticks: number
  cancelled: boolean
}

/**
 * A token, leaky or warm-up bucket: the GCRA kernel on one row, read at the clock's time.
 *
 * Waiting is by reservation (like Go's x/time/rate `Reserve`): `acquire` moves `tat`
 * forward at once, as if admitted at the instant its permits are due, and sleeps until
 * then, so every caller waits for its own permits and later callers queue behind it.
 */
export class GcraLimiter implements RateLimiter {
  readonly name: string
  readonly #definition: AlgorithmDefinition<GcraSpec>
  readonly #factory: string
  readonly #clock: Clock
  #kernel: GcraKernel
  /** Reservations of waiting `acquire` calls, in slot order. */
  readonly #reservations: Reservation[] = []

  constructor(
    definition: AlgorithmDefinition<GcraSpec>,
    name: string,
    clock: Clock,
    kernel: GcraKernel,
  ) {
    this.#definition = definition
    this.#factory = definition.factory
    this.name = name
    this.#clock = clock
    this.#kernel = kernel
    kernel.resize(1)
    kernel.clear(0, clock.now())
  }

  get limit(): number {
    return this.#kernel.spec.limit
  }

  get windowMs(): number {
    return this.#kernel.spec.window
  }

  /** Largest burst, in permits. */
  get capacity(): number {
    return this.#kernel.capacity
  }

  /**
   * Waiting reservations keep their slots and are served at their times: they are debt
   * already in the schedule, whose instant the carry keeps. A cancel then gives back the
   * same time in the new spec's ticks, rounded down (never more than was taken); after a
   * reset nothing, since the schedule it was part of is gone.
   */
  reconfigure(spec: ReconfigureSpec<RateLimiterSpec>, options?: ReconfigureOptions): void {
    const old = this.#kernel
    const next = reconfigureKernel(this.#definition, this.name, this.#clock, old, spec, options)
    for (const reservation of this.#reservations) {
      if (next.carry === 'reset') {
        reservation.us = 0
        reservation.ticks = 0
      } else {
        mulDivMod(reservation.ticks, next.spec.limit, old.spec.limit)
        reservation.ticks = PAIR[0]!
      }
    }
    this.#kernel = next.kernel
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits(`${this.#factory}.tryAcquire`, permits)
    }
    return this.#kernel.take(0, this.#clock.now(), permits)
  }

  availablePermits(): number {
    return this.#kernel.available(0, this.#clock.now())
  }

  retryAfterMs(permits = 1): number {
    if (!isPermitCount(permits)) throw invalidPermits(`${this.#factory}.retryAfterMs`, permits)
    return this.#kernel.wait(0, this.#clock.now(), permits)
  }

  resetMs(): number {
    return this.#kernel.untilFresh(0, this.#clock.now())
  }

  receipt(): number {
    return this.#kernel.receipt(0)
  }

  refund(permits = 1, receipt?: number): void {
    if (!isPermitCount(permits)) throw invalidPermits(`${this.#factory}.refund`, permits)
    const t = micros(this.#clock.now())
    if (!this.#kernel.credit(0, t, permits, receipt)) return
    if (this.#reservations.length !== 0) {
      // Waiters hold the tail of the schedule and the refunded permits sit before their
      // slots: moving `tat` back would let a newcomer share a waiter's slot. The refund
      // is a hole ahead of them, returned only if every one of them is cancelled.
      this.#reservations.unshift({ us: PAIR[0]!, ticks: PAIR[1]!, cancelled: true })
      return
    }
    this.#kernel.giveBack(0, t, PAIR[0]!, PAIR[1]!)
  }

  async acquire(permits = 1, options?: WaitOptions): Promise<void> {
    const method = `${this.#factory}.acquire`
    if (!isPermitCount(permits)) throw invalidPermits(method, permits)
    const { timeoutMs, signal } = readWaitOptions(method, options)
    signal?.throwIfAborted()
    if (permits > this.capacity) throw neverError(this.name, permits, this.capacity)
    const now = this.#clock.now()
    const delay = this.#kernel.wait(0, now, permits)
    if (delay > timeoutMs) {
      throw new RateLimitError('ERR_SLUICE_TIMEOUT', {
        limiter: this.name,
        retryAfterMs: delay,
        message: `${this.name}: ${permits} permit(s) not available within ${timeoutMs} ms (available in ${Math.ceil(delay)} ms)`,
      })
    }
    // Reserve now, so callers arriving later (waiting or not) are scheduled after this one.
    this.#kernel.reserve(0, now, now + delay, permits)
    const reservation: Reservation = { us: PAIR[0]!, ticks: PAIR[1]!, cancelled: false }
    if (delay === 0) return
    this.#reservations.push(reservation)
    try {
      await this.#clock.sleep(delay, signal)
    } catch (error) {
      this.#cancel(reservation)
      throw error
    }
    this.#settle(reservation)
  }

  /**
   * An aborted reservation is handed back only once no later reservation depends on it
   * (as in Go's x/time/rate `CancelAt`): later waiters were scheduled behind it, so
   * moving `tat` back while they stand would let a newcomer share their slot and break
   * the burst bound. Trailing cancelled reservations are popped, each returning its cost.
   */
  #cancel(reservation: Reservation): void {
    reservation.cancelled = true
    const t = micros(this.#clock.now())
    const reservations = this.#reservations
    for (let last = reservations.at(-1); last?.cancelled; last = reservations.at(-1)) {
      reservations.pop()
      this.#kernel.giveBack(0, t, last.us, last.ticks)
    }
  }

  /** A reservation whose time came; cancelled ones before it are in the past, so gone. */
  #settle(reservation: Reservation): void {
    const reservations = this.#reservations
    const index = reservations.indexOf(reservation)
    if (index !== -1) reservations.splice(index, 1)
    while (reservations[0]?.cancelled) reservations.shift()
  }
}
