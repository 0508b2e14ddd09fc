import { micros, mulDivCeil } from '../exact'
import { carryMismatch, type Quota, type RateKernel } from '../kernel'
import type { Carry, NormalizedRateSpec } from '../types'

type FixedWindowSpec = Extract<NormalizedRateSpec, { algorithm: 'fixed-window' }>

/**
 * A fixed window: windows aligned to the clock's zero (window number `floor(t / window)`,
 * t in µs), so every store agrees where they start, and one count per row. A count above
 * the limit (debt) keeps the row refused until its window ends.
 */
export class FixedWindowKernel implements RateKernel {
  readonly spec: FixedWindowSpec
  readonly ageless = false
  readonly freshPermits: number
  readonly capacity: number
  readonly width = 2
  rows = 0
  readonly #limit: number
  readonly #window: number
  /** Per row: the window counted in (`-Infinity`: none) and its count. */
  #state = new Float64Array(0)

  constructor(spec: FixedWindowSpec) {
    this.spec = spec
    this.#limit = spec.limit
    this.capacity = spec.limit
    this.freshPermits = spec.limit
    this.#window = micros(spec.window)
  }

  resize(rows: number): void {
    if (rows <= this.rows) return
    const state = new Float64Array(rows * 2)
    state.set(this.#state)
    this.#state = state
    this.rows = rows
  }

  clear(row: number): void {
    this.#state[2 * row] = Number.NEGATIVE_INFINITY
    this.#state[2 * row + 1] = 0
  }

  /** Permits counted in the window of `t` (µs). */
  #used(row: number, t: number): number {
    if (row < 0) return 0
    return this.#state[2 * row] === Math.floor(t / this.#window) ? this.#state[2 * row + 1]! : 0
  }

  isFresh(row: number, now: number): boolean {
    return this.#used(row, micros(now)) === 0
  }

  available(row: number, now: number): number {
    const used = this.#used(row, micros(now))
    return used < this.#limit ? this.#limit - used : 0
  }

  take(row: number, now: number, cost: number, out?: Quota): boolean {
    const t = micros(now)
    const used = this.#used(row, t)
    const allowed = used + cost <= this.#limit
    if (allowed && row >= 0) this.#count(row, t, used + cost)
    if (out !== undefined) this.#report(row, t, cost, allowed, out)
    return allowed
  }

  #count(row: number, t: number, count: number): void {
    this.#state[2 * row] = Math.floor(t / this.#window)
    this.#state[2 * row + 1] = count
  }

  fits(row: number, now: number, cost: number): boolean {
    return this.wait(row, now, cost) === 0
  }

  force(row: number, now: number, cost: number): void {
    const t = micros(now)
    this.#count(row, t, this.#used(row, t) + cost)
  }

  quota(row: number, now: number, cost: number, allowed: boolean, out: Quota): void {
    this.#report(row, micros(now), cost, allowed, out)
  }

  #report(row: number, t: number, cost: number, allowed: boolean, out: Quota): void {
    const used = this.#used(row, t)
    const available = used < this.#limit ? this.#limit - used : 0
    const left = (Math.floor(t / this.#window) + 1) * this.#window - t
    out.available = available
    out.resetMs = available < this.#limit ? left / 1000 : 0
    out.retryAfterMs = allowed
      ? 0
      : cost > this.#limit
        ? Number.POSITIVE_INFINITY
        : used + cost <= this.#limit
          ? 0
          : left / 1000
    out.receipt = Math.floor(t / this.#window)
  }

  wait(row: number, now: number, cost: number): number {
    if (cost > this.#limit) return Number.POSITIVE_INFINITY
    const t = micros(now)
    if (this.#used(row, t) + cost <= this.#limit) return 0
    return ((Math.floor(t / this.#window) + 1) * this.#window - t) / 1000
  }

  untilFresh(row: number, now: number): number {
    const t = micros(now)
    if (this.#used(row, t) === 0) return 0
    return ((Math.floor(t / this.#window) + 1) * this.#window - t) / 1000
  }

  refund(row: number, now: number, cost: number, receipt?: number): void {
    const t = micros(now)
    const used = this.#used(row, t)
    // Permits of an earlier window stopped counting when it ended.
    if (used === 0 || (receipt !== undefined && receipt !== this.#state[2 * row])) return
    this.#state[2 * row + 1] = used > cost ? used - cost : 0
  }

  receipt(row: number): number {
    return this.#state[2 * row]!
  }

  /** `[window, count]`: the window's number and what was taken in it. */
  read(row: number, into: Float64Array | number[], at = 0): void {
    into[at] = this.#state[2 * row]!
    into[at + 1] = this.#state[2 * row + 1]!
  }

  write(row: number, from: ArrayLike<number>, at = 0): void {
    this.#state[2 * row] = from[at] ?? Number.NEGATIVE_INFINITY
    this.#state[2 * row + 1] = from[at + 1] ?? 0
  }

  /**
   * Carries the current window's count u over into the new spec's window of `now` (the
   * same window when only the limit changes): proportional ceil(u·L′/L), as-is u + L′ − L
   * (never below 0), additive u (a debt above the old limit stays as large: u + L′ − L,
   * refused until the window ends). A count of an earlier window counts nothing.
   */
  carry(row: number, now: number, from: RateKernel, fromRow: number, carry: Carry): void {
    if (!(from instanceof FixedWindowKernel)) throw carryMismatch(this.spec, from.spec)
    const t = micros(now)
    const used = from.#used(fromRow, t)
    const oldLimit = from.#limit
    const delta = this.#limit - oldLimit
    let count = 0
    if (carry !== 'reset' && used > 0) {
      if (carry === 'proportional') count = mulDivCeil(used, this.#limit, oldLimit)
      else if (carry === 'as-is') count = Math.max(0, used + delta)
      else count = used > oldLimit ? used + delta : used
    }
    if (count === 0) this.clear(row)
    else this.#count(row, t, count)
  }
}
