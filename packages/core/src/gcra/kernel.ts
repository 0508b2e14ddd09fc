import { ceilDiv, floorDiv } from '../carry'
import { gcd, micros, mulAddDivMod, mulDivMod, PAIR } from '../exact'
import { carryMismatch, type Quota, type RateKernel } from '../kernel'
import type { Carry, NormalizedRateSpec } from '../types'

/** A row's `tat` when fresh: no theoretical arrival time at all, so any `now` is past it. */
const FRESH = Number.NEGATIVE_INFINITY

type GcraSpec = Extract<
  NormalizedRateSpec,
  { algorithm: 'token-bucket' | 'leaky-bucket' | 'warm-up' }
>

/**
 * The generic cell rate algorithm (virtual scheduling), exact over every accepted spec:
 * the kernel of the token bucket (τ = capacity·T) and the leaky bucket (τ = T), and the
 * base of the warm-up bucket's.
 *
 * Time is counted in ticks of 1/limit µs, so the emission interval T is exactly `window`
 * ticks (the window in µs) and τ = capacity·window: integers for every spec, which is what
 * lets "3 per second" or "7 per 100 ms" admit exactly `capacity` from full. A tick count
 * can pass 2^53 (10^10 a day makes τ = 8.64·10^20 ticks), so the state — the theoretical
 * arrival time `tat` — is kept in two parts: whole microseconds, and the ticks of a
 * started microsecond (0 ≤ ticks < limit). A request for n permits is admitted iff
 * `max(tat, now) + n·T − now ≤ τ`, and then `tat` becomes that sum.
 */
export class GcraKernel implements RateKernel {
  readonly spec: GcraSpec
  readonly ageless: boolean = false
  readonly freshPermits: number
  readonly capacity: number
  readonly width: number = 2
  rows = 0
  /** Ticks per microsecond (= limit). */
  protected readonly ticks: number
  /** The window in microseconds: T in ticks. */
  protected readonly window: number
  /** τ = capacity·T, as whole microseconds and ticks. */
  protected readonly tauUs: number
  protected readonly tauTicks: number
  /** One permit's interval, as whole microseconds and ticks: the common cost, precomputed. */
  readonly #oneUs: number
  readonly #oneTicks: number
  /**
   * gcd(limit, window) and both divided by it: `n·window / limit` is `n·w / l` with l and
   * w small for most specs (10^10 a day is 25 / 216), so products stay below 2^53 and the
   * exact slow path is for policies whose limit and window share nothing.
   */
  readonly #gcd: number
  readonly #l: number
  readonly #w: number
  /** Whole microseconds of each row's `tat` (`-Infinity`: fresh). */
  protected at = new Float64Array(0)
  /** Ticks of each row's `tat` past its whole microseconds. */
  protected frac = new Float64Array(0)

  constructor(spec: GcraSpec) {
    this.spec = spec
    this.capacity = spec.algorithm === 'leaky-bucket' ? 1 : spec.capacity
    this.freshPermits = this.capacity
    this.ticks = spec.limit
    this.window = micros(spec.window)
    mulDivMod(this.capacity, this.window, this.ticks)
    this.tauUs = PAIR[0]!
    this.tauTicks = PAIR[1]!
    this.#gcd = gcd(this.ticks, this.window)
    this.#l = this.ticks / this.#gcd
    this.#w = this.window / this.#gcd
    this.#divide(1)
    this.#oneUs = PAIR[0]!
    this.#oneTicks = PAIR[1]!
  }

  /** `cost·window / limit` into PAIR: whole microseconds, and the ticks left over. */
  #divide(cost: number): void {
    mulDivMod(cost, this.#w, this.#l)
    PAIR[1] = PAIR[1]! * this.#gcd
  }

  resize(rows: number): void {
    if (rows <= this.rows) return
    this.at = grown(this.at, rows)
    this.frac = grown(this.frac, rows)
    this.rows = rows
  }

  clear(row: number, _now: number): void {
    this.at[row] = FRESH
    this.frac[row] = 0
  }

  isFresh(row: number, now: number): boolean {
    const at = this.at[row]!
    const t = micros(now)
    return at < t || (at === t && this.frac[row] === 0)
  }

  /** The cost of `cost` permits for `row` at `t` (µs), into PAIR: whole microseconds and ticks. */
  protected costPair(_row: number, _t: number, cost: number): void {
    if (cost === 1) {
      PAIR[0] = this.#oneUs
      PAIR[1] = this.#oneTicks
    } else {
      this.#divide(cost)
    }
  }

  take(row: number, now: number, cost: number, out?: Quota): boolean {
    const t = micros(now)
    let allowed = false
    if (cost <= this.capacity) {
      let at = row < 0 ? FRESH : this.at[row]!
      let frac = row < 0 ? 0 : this.frac[row]!
      // Start from max(tat, now).
      if (at < t) {
        at = t
        frac = 0
      }
      this.costPair(row, t, cost)
      at += PAIR[0]!
      frac += PAIR[1]!
      if (frac >= this.ticks) {
        frac -= this.ticks
        at += 1
      }
      const ahead = at - t
      allowed = ahead < this.tauUs || (ahead === this.tauUs && frac <= this.tauTicks)
      if (allowed && row >= 0) {
        this.at[row] = at
        this.frac[row] = frac
      }
    }
    if (out !== undefined) this.report(row, t, cost, allowed, out)
    return allowed
  }

  fits(row: number, now: number, cost: number): boolean {
    return this.wait(row, now, cost) === 0
  }

  force(row: number, now: number, cost: number): void {
    this.reserve(row, now, now, cost)
  }

  available(row: number, now: number): number {
    return this.availableAt(row, micros(now))
  }

  /** floor((τ − debt) / T), 0 in debt: what fits at `t` (µs). */
  protected availableAt(row: number, t: number): number {
    const at = row < 0 ? FRESH : this.at[row]!
    if (at < t) return this.capacity
    // τ − (tat − t), as whole microseconds and ticks.
    let us = this.tauUs - (at - t)
    let ticks = this.tauTicks - this.frac[row]!
    if (ticks < 0) {
      ticks += this.ticks
      us -= 1
    }
    if (us < 0) {
      // In debt beyond τ: no remainder for `nextPermitUs` to use.
      PAIR[1] = -1
      return 0
    }
    // floor((us·limit + ticks) / window), reduced by the gcd: with ticks = q·gcd + r
    // (r < gcd), the r ticks never reach a whole permit on their own.
    const gcd = this.#gcd
    const whole = gcd === 1 ? ticks : Math.floor(ticks / gcd)
    const numerator = us * this.#l + whole
    if (numerator <= Number.MAX_SAFE_INTEGER) {
      const free = Math.floor(numerator / this.#w)
      PAIR[1] = (numerator - free * this.#w) * gcd + (ticks - whole * gcd)
      return free
    }
    mulAddDivMod(us, this.#l, whole, this.#w)
    PAIR[1] = PAIR[1]! * gcd + (ticks - whole * gcd)
    return PAIR[0]!
  }

  quota(row: number, now: number, cost: number, allowed: boolean, out: Quota): void {
    this.report(row, micros(now), cost, allowed, out)
  }

  protected report(row: number, t: number, cost: number, allowed: boolean, out: Quota): void {
    const available = this.availableAt(row, t)
    out.available = available
    out.resetMs = available < this.capacity ? this.nextPermitUs(row, t, available) / 1000 : 0
    out.retryAfterMs = allowed
      ? 0
      : cost > this.capacity
        ? Number.POSITIVE_INFINITY
        : this.waitUs(row, t, cost) / 1000
    out.receipt = row < 0 ? t : this.receipt(row)
  }

  /**
   * Whole microseconds until one more permit than `available` fits, just after
   * `availableAt` left the slack's remainder in PAIR: with S = τ − debt = available·T + rem
   * ticks, the next permit needs T − rem more ticks of drain, rounded up to whole µs.
   * (The debt never runs out first: the next permit is within capacity.)
   */
  protected nextPermitUs(row: number, t: number, available: number): number {
    if (PAIR[1]! < 0) return this.waitUs(row, t, available + 1)
    return Math.ceil((this.window - PAIR[1]!) / this.ticks)
  }

  wait(row: number, now: number, cost: number): number {
    if (cost > this.capacity) return Number.POSITIVE_INFINITY
    return this.waitUs(row, micros(now), cost) / 1000
  }

  /** Whole microseconds from `t` until `cost` (≤ capacity) fits. */
  protected waitUs(row: number, t: number, cost: number): number {
    return this.steadyWaitUs(
      row < 0 ? FRESH : this.at[row]!,
      row < 0 ? 0 : this.frac[row]!,
      t,
      cost,
    )
  }

  /**
   * `max(tat, t) + cost·T − τ − t`, rounded up to whole microseconds (0 when it fits): the
   * wait with T and τ constant from `t` on.
   */
  protected steadyWaitUs(at: number, frac: number, t: number, cost: number): number {
    if (at < t) {
      at = t
      frac = 0
    }
    this.#divide(cost)
    let us = at + PAIR[0]! - t - this.tauUs
    let ticks = frac + PAIR[1]! - this.tauTicks
    if (ticks < 0) {
      ticks += this.ticks
      us -= 1
    } else if (ticks >= this.ticks) {
      ticks -= this.ticks
      us += 1
    }
    if (us < 0) return 0
    return ticks > 0 ? us + 1 : us
  }

  untilFresh(row: number, now: number): number {
    const t = micros(now)
    const at = this.at[row]!
    if (at < t || (at === t && this.frac[row] === 0)) return 0
    return (this.receipt(row) - t) / 1000
  }

  refund(row: number, now: number, cost: number, receipt?: number): void {
    const t = micros(now)
    if (this.credit(row, t, cost, receipt)) this.giveBack(row, t, PAIR[0]!, PAIR[1]!)
  }

  /**
   * What a refund of `cost` permits at `t` (µs) gives back, into PAIR as whole
   * microseconds and ticks; false when nothing. The receipt is `tat` just after the take:
   * the bucket drains its debt oldest first, so of the permits taken then, only the part
   * of their debt not yet drained by now (receipt − now) still counts; giving back more
   * would credit permits taken since.
   */
  credit(row: number, t: number, cost: number, receipt: number | undefined): boolean {
    if (this.at[row]! < t) return false
    this.costPair(row, t, cost)
    if (receipt !== undefined) {
      const owed = receipt - t
      if (owed <= 0) return false
      if (PAIR[0]! > owed || (PAIR[0] === owed && PAIR[1]! > 0)) {
        PAIR[0] = owed
        PAIR[1] = 0
      }
    }
    return true
  }

  /**
   * Moves `tat` back by `us` microseconds and `ticks`, never before `t` (µs): a refund
   * restores at most a fresh bucket. A limiter's cancelled reservation comes back this way.
   */
  giveBack(row: number, t: number, us: number, ticks: number): void {
    let at = this.at[row]! - us
    let frac = this.frac[row]! - ticks
    if (frac < 0) {
      frac += this.ticks
      at -= 1
    }
    if (at < t) {
      at = t
      frac = 0
    }
    this.at[row] = at
    this.frac[row] = frac
  }

  /**
   * Reserves `cost` permits due at `at` (when `wait` says they fit) for a caller that
   * will sleep until then: `tat` moves from max(tat, now), at the cost of their time, so
   * the reservation lands on its exact slot. (Taking at `at`, rounded up to a whole
   * microsecond, would lose the fraction of a microsecond on every wait of a paced
   * bucket.) The cost goes into PAIR, as whole microseconds and ticks, for a cancel.
   */
  reserve(row: number, now: number, at: number, cost: number): void {
    const t = micros(now)
    let start = this.at[row]!
    let frac = this.frac[row]!
    if (start < t) {
      start = t
      frac = 0
    }
    this.costPair(row, micros(at), cost)
    start += PAIR[0]!
    frac += PAIR[1]!
    if (frac >= this.ticks) {
      frac -= this.ticks
      start += 1
    }
    this.at[row] = start
    this.frac[row] = frac
  }

  /** The receipt of the row's latest take: its `tat`, rounded up to a whole microsecond. */
  receipt(row: number): number {
    return this.at[row]! + (this.frac[row]! > 0 ? 1 : 0)
  }

  read(row: number, into: Float64Array | number[], at = 0): void {
    into[at] = this.at[row]!
    into[at + 1] = this.frac[row]!
  }

  write(row: number, from: ArrayLike<number>, at = 0): void {
    this.at[row] = from[at] ?? FRESH
    this.frac[row] = from[at + 1] ?? 0
  }

  /**
   * Carries `tat` over, in exact integers (BigInt: a rare path, whose products pass 2^53
   * for large specs). With D = tat − now ahead and the available permits A = (τ − D) / T:
   * a row in debt (D > τ) keeps the instant it is paid off, tat − τ, in every mode, and
   * gets the new τ from there; a row in credit gets the new mode's A′ (proportional
   * A·K′/K, as-is min(A, K′), additive A + K′ − K, below 0 a debt of the permits the new
   * capacity cannot hold), as D′ = τ′ − A′·T′ rounded up to a tick of the new spec, so it
   * never holds more than A′. Fractions of a permit carry over, as Bucket4j's rounding
   * error does: 1.8 permits become 1.8·new/old.
   */
  carry(row: number, now: number, from: RateKernel, fromRow: number, carry: Carry): void {
    if (!(from instanceof GcraKernel) || from.spec.algorithm !== this.spec.algorithm) {
      throw carryMismatch(this.spec, from.spec)
    }
    const t = micros(now)
    const created = from.createdAt(fromRow, t)
    this.adoptCreated(row, created)
    this.at[row] = FRESH
    this.frac[row] = 0
    // A fresh row (tat not after now) stays fresh; so does every row reset.
    if (carry === 'reset' || fromRow < 0 || from.at[fromRow]! < t) return
    if (from.at[fromRow] === t && from.frac[fromRow] === 0) return
    const oldTicks = BigInt(from.ticks)
    const newTicks = BigInt(this.ticks)
    const oldTat = BigInt(from.at[fromRow]!) * oldTicks + BigInt(from.frac[fromRow]!)
    const ahead = oldTat - BigInt(t) * oldTicks
    const oldInterval = from.intervalTicks(created, t)
    const oldTolerance = from.toleranceTicks(oldInterval)
    const newInterval = this.intervalTicks(created, t)
    const newTolerance = this.toleranceTicks(newInterval)
    const credit = oldTolerance - ahead
    let tat: bigint
    if (credit < 0n) {
      // Debt: paid off at the same instant whatever the mode, tat − τ, from which the new
      // τ applies (rounded up to a tick of the new spec). Guava's setRate: 2 per second,
      // acquire(10) at 0, then 1 per second: the permits granted are paid off at 5 s
      // still, and the next permit is due 1 s after. A warm-up bucket's τ may shrink with
      // age: the one at the instant it is paid off.
      const paidOff = from.paidOffUs(fromRow, t)
      const oldAt = from.toleranceTicks(from.intervalTicks(created, paidOff))
      const newAt = this.toleranceTicks(this.intervalTicks(created, paidOff))
      tat = ceilDiv((oldTat - oldAt) * newTicks, oldTicks) + newAt
    } else {
      const oldCapacity = BigInt(from.capacity)
      const newCapacity = BigInt(this.capacity)
      let newAhead: bigint
      if (carry === 'proportional') {
        newAhead =
          newTolerance - floorDiv(credit * newCapacity * newInterval, oldInterval * oldCapacity)
      } else if (carry === 'as-is') {
        newAhead =
          newTolerance -
          (credit >= newCapacity * oldInterval
            ? newCapacity * newInterval
            : floorDiv(credit * newInterval, oldInterval))
      } else {
        // Additive keeps every permit taken counted: A′ = A + K′ − K, below 0 a debt (the
        // permits the new capacity cannot hold are owed, as a window's count above its
        // limit is), so flipping back and forth between two capacities gains nothing.
        newAhead =
          newTolerance -
          floorDiv((credit + (newCapacity - oldCapacity) * oldInterval) * newInterval, oldInterval)
      }
      if (newAhead <= 0n) return
      tat = BigInt(t) * newTicks + newAhead
    }
    this.at[row] = Number(tat / newTicks)
    this.frac[row] = Number(tat % newTicks)
  }

  /**
   * For `carry`: a microsecond at which τ is what it is when the row, in debt at `t`, is
   * paid off (τ is constant here: `t` will do).
   */
  protected paidOffUs(_row: number, t: number): number {
    return t
  }

  /** For `carry`: when the row was created, in µs (a warm-up bucket's age counts from it). */
  protected createdAt(_row: number, t: number): number {
    return t
  }

  /** For `carry`: makes `created` (µs) the row's creation time. */
  protected adoptCreated(_row: number, _created: number): void {}

  /** For `carry`: one permit's interval T in ticks for a row created at `created`, at `t`. */
  protected intervalTicks(_created: number, _t: number): bigint {
    return BigInt(this.window)
  }

  /** For `carry`: the burst budget τ in ticks at `interval`. */
  protected toleranceTicks(_interval: bigint): bigint {
    return BigInt(this.capacity) * BigInt(this.window)
  }
}

/** `array` with room for `length` numbers, the ones there kept. */
export function grown(array: Float64Array<ArrayBuffer>, length: number): Float64Array<ArrayBuffer> {
  if (array.length >= length) return array
  const bigger = new Float64Array(length)
  bigger.set(array)
  return bigger
}
