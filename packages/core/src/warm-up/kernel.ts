import { gcd, micros, mulAddDiv, mulDivMod, PAIR } from '../exact'
import { GcraKernel, grown } from '../gcra/kernel'
import type { NormalizedRateSpec } from '../types'

type WarmUpSpec = Extract<NormalizedRateSpec, { algorithm: 'warm-up' }>

/** Cold intervals are 3·T: fixed, as in Alibaba Sentinel, so there is one curve to regress. */
const COLD_FACTOR = 3

/**
 * Scratch the kernel's helpers pass numbers through: `[interval, at, frac, created, t,
 * estimate, at and frac after the fit tested]` (one per process, read straight after). A large double passed to or returned
 * from a call V8 did not inline is a fresh heap number; a slot of a Float64Array is not.
 */
const S = new Float64Array(8)

/** Doublings a search for the first admitting microsecond may take past its estimate. */
const GALLOP_STEPS = 64

/**
 * The warm-up token bucket: GCRA whose interval starts at 3·T and shrinks linearly to T
 * over `warmUp`, measured from the row's creation (its age, not its traffic). The interval
 * is a whole number of ticks, `3·T − floor(2·T·age / warmUp)`, so every store computes the
 * same one; the burst budget is τ = capacity·T, clamped to at least one current interval,
 * so the burst grows from capacity/3 to capacity and capacity 1 still admits one at a time
 * when cold. State: `tat` in two parts (as `GcraKernel`), and the creation time.
 */
export class WarmUpKernel extends GcraKernel {
  override readonly ageless = true
  override readonly width = 3
  override readonly freshPermits: number
  readonly #warmUp: number
  /** capacity·T in ticks, or Infinity when that passes 2^53 (then always above an interval). */
  readonly #tauInTicks: number
  /** The age (µs) at which the interval falls to capacity·T (capacity below 3). */
  readonly #fullBurstAge: number
  /**
   * 2·T / warmUp in lowest terms (0 / 1 when 2·T passes 2^53), so the interval's fall
   * `floor(2·T·age / warmUp)` is a product that fits a double for most specs: no exact
   * slow path on a hot key.
   */
  readonly #fallNum: number
  readonly #fallDen: number
  /** Each row's creation time, in µs. */
  #created = new Float64Array(0)

  constructor(spec: WarmUpSpec) {
    super(spec)
    this.#warmUp = micros(spec.warmUp)
    const tau = spec.capacity * this.window
    this.#tauInTicks = tau <= Number.MAX_SAFE_INTEGER ? tau : Number.POSITIVE_INFINITY
    this.#fullBurstAge = (this.#warmUp * (COLD_FACTOR - spec.capacity)) / (COLD_FACTOR - 1)
    const twice = 2 * this.window
    const common =
      twice <= Number.MAX_SAFE_INTEGER && this.#warmUp > 0 ? gcd(twice, this.#warmUp) : 0
    this.#fallNum = common === 0 ? 0 : twice / common
    this.#fallDen = common === 0 ? 1 : this.#warmUp / common
    this.freshPermits = this.available(-1, 0)
  }

  override resize(rows: number): void {
    if (rows <= this.rows) return
    this.#created = grown(this.#created, rows)
    super.resize(rows)
  }

  override clear(row: number, now: number): void {
    super.clear(row, now)
    this.#created[row] = micros(now)
  }

  override isFresh(): boolean {
    return false
  }

  /** The interval in ticks at age `age` (µs), into `S[0]`. */
  #interval(age: number): void {
    if (age >= this.#warmUp) {
      S[0] = this.window
      return
    }
    const a = Math.max(age, 0)
    const fall = this.#fallNum * a
    if (fall <= Number.MAX_SAFE_INTEGER && this.#fallNum !== 0) {
      S[0] = COLD_FACTOR * this.window - Math.floor(fall / this.#fallDen)
      return
    }
    mulDivMod(2 * this.window, a, this.#warmUp)
    S[0] = COLD_FACTOR * this.window - PAIR[0]!
  }

  /** The row's state (`-1`: fresh) and the time `t` (µs) into `S[1..4]`, for `#fits`. */
  #state(row: number, t: number, created: number): void {
    S[1] = row < 0 ? Number.NEGATIVE_INFINITY : this.at[row]!
    S[2] = row < 0 ? 0 : this.frac[row]!
    S[3] = created
    S[4] = t
  }

  #createdOf(row: number, t: number): number {
    return row < 0 ? t : this.#created[row]!
  }

  protected override costPair(row: number, t: number, cost: number): void {
    this.#interval(t - this.#createdOf(row, t))
    const product = cost * S[0]!
    if (product <= Number.MAX_SAFE_INTEGER) {
      const us = Math.floor(product / this.ticks)
      PAIR[0] = us
      PAIR[1] = product - us * this.ticks
    } else {
      mulDivMod(cost, S[0]!, this.ticks)
    }
  }

  /** τ at `interval` (ticks), into PAIR: capacity·T, or one interval when that is more. */
  #tolerance(interval: number): void {
    if (interval > this.#tauInTicks) {
      mulDivMod(1, interval, this.ticks)
    } else {
      PAIR[0] = this.tauUs
      PAIR[1] = this.tauTicks
    }
  }

  /**
   * Whether `cost` permits fit `dt` µs after `S[4]` on the state (`at`, `frac`, `created`)
   * in `S[1..3]`.
   */
  #fits(dt: number, cost: number): boolean {
    const t = S[4]! + dt
    let at = S[1]!
    let frac = S[2]!
    if (at < t) {
      at = t
      frac = 0
    }
    this.#interval(t - S[3]!)
    const interval = S[0]!
    // cost·interval / ticks and τ inline: a large double passed to a call is a heap number.
    const product = cost * interval
    if (product <= Number.MAX_SAFE_INTEGER) {
      const us = Math.floor(product / this.ticks)
      at += us
      frac += product - us * this.ticks
    } else {
      mulDivMod(cost, interval, this.ticks)
      at += PAIR[0]!
      frac += PAIR[1]!
    }
    if (frac >= this.ticks) {
      frac -= this.ticks
      at += 1
    }
    S[6] = at
    S[7] = frac
    const ahead = at - t
    if (interval <= this.#tauInTicks) {
      return ahead < this.tauUs || (ahead === this.tauUs && frac <= this.tauTicks)
    }
    this.#tolerance(interval)
    return ahead < PAIR[0]! || (ahead === PAIR[0] && frac <= PAIR[1]!)
  }

  override take(row: number, now: number, cost: number, out?: Parameters<GcraKernel['take']>[3]) {
    const t = micros(now)
    const created = this.#createdOf(row, t)
    if (t - created >= this.#warmUp) return super.take(row, now, cost, out)
    this.#state(row, t, created)
    const allowed = cost <= this.capacity && this.#fits(0, cost)
    // What `force` would write: `#fits` at `t` computed the new `tat` (S[6], S[7]).
    if (allowed && row >= 0) {
      this.at[row] = S[6]!
      this.frac[row] = S[7]!
    }
    if (out !== undefined) this.report(row, t, cost, allowed, out)
    return allowed
  }

  /** floor((τ − debt) / interval), at most capacity, 0 in debt. */
  protected override availableAt(row: number, t: number): number {
    const created = this.#createdOf(row, t)
    if (t - created >= this.#warmUp) return super.availableAt(row, t)
    this.#state(row, t, created)
    return this.#freeNow()
  }

  /** The warming `availableAt`, on the state `#state` put in `S[1..4]`. */
  #freeNow(): number {
    const t = S[4]!
    this.#interval(t - S[3]!)
    const interval = S[0]!
    let us = this.tauUs
    let ticks = this.tauTicks
    if (interval > this.#tauInTicks) {
      this.#tolerance(interval)
      us = PAIR[0]!
      ticks = PAIR[1]!
    }
    const at = S[1]!
    if (at >= t) {
      us -= at - t
      ticks -= S[2]!
      if (ticks < 0) {
        ticks += this.ticks
        us -= 1
      }
      if (us < 0) return 0
    }
    // floor((us·ticks + ticks) / interval), inline while it fits a double.
    const numerator = us * this.ticks + ticks
    const free =
      us * this.ticks <= Number.MAX_SAFE_INTEGER && numerator <= Number.MAX_SAFE_INTEGER
        ? Math.floor(numerator / interval)
        : mulAddDiv(us, this.ticks, ticks, interval)
    return Math.min(free, this.capacity)
  }

  /**
   * While warming, the report on the state in `S` (one `#state` for the free count and both
   * waits): times stay in the Float64Array rather than pass across calls as heap numbers.
   */
  protected override report(
    row: number,
    t: number,
    cost: number,
    allowed: boolean,
    out: Parameters<GcraKernel['take']>[3] & object,
  ): void {
    const created = this.#createdOf(row, t)
    if (t - created >= this.#warmUp) {
      super.report(row, t, cost, allowed, out)
      return
    }
    this.#state(row, t, created)
    const available = this.#freeNow()
    out.available = available
    out.resetMs = available < this.capacity ? this.#searchUs(available + 1) / 1000 : 0
    out.retryAfterMs = allowed
      ? 0
      : cost > this.capacity
        ? Number.POSITIVE_INFINITY
        : this.#searchUs(cost) / 1000
    out.receipt = row < 0 ? t : this.receipt(row)
  }

  /** While warming the interval moves too: the search, not the token bucket's closed form. */
  protected override nextPermitUs(row: number, t: number, available: number): number {
    return this.waitUs(row, t, available + 1)
  }

  /**
   * The first whole microsecond from `t` at which `cost` (≤ capacity) fits. Once warm the
   * token bucket's closed form; while warming, whether it fits only ever turns from no to
   * yes as time passes (the excess over the budget is `min(debt + n·I − capacity·T,
   * debt + (n − 1)·I)`, and the debt and the interval I only shrink), so the answer is
   * found from an estimate, then checked and corrected exactly: usually the estimate and
   * the microsecond before it.
   */
  protected override waitUs(row: number, t: number, cost: number): number {
    const at = row < 0 ? Number.NEGATIVE_INFINITY : this.at[row]!
    const frac = row < 0 ? 0 : this.frac[row]!
    const created = this.#createdOf(row, t)
    if (t - created >= this.#warmUp) return this.steadyWaitUs(at, frac, t, cost)
    this.#state(row, t, created)
    return this.#searchUs(cost)
  }

  /** The warming `waitUs`, on the state `#state` put in `S[1..4]`. */
  #searchUs(cost: number): number {
    if (this.#fits(0, cost)) return 0
    this.#estimate(S[4]! - S[3]!, cost)
    const guess = Math.max(1, Math.ceil(S[5]!))
    let lo: number
    let hi: number
    if (this.#fits(guess, cost)) {
      if (!this.#fits(guess - 1, cost)) return guess
      lo = 0
      hi = guess - 1
    } else {
      let step = 1
      for (let i = 0; i < GALLOP_STEPS; i++, step *= 2) {
        if (this.#fits(guess + step, cost)) break
      }
      lo = guess + Math.floor(step / 2)
      hi = guess + step
    }
    // Invariant: it fits at hi, not at lo. Past 2^53 µs (a debt of centuries) neighbouring
    // doubles are further apart than 1: stop when no number lies between them.
    while (hi - lo > 1) {
      const mid = lo + Math.floor((hi - lo) / 2)
      if (mid === lo || mid === hi) break
      if (this.#fits(mid, cost)) hi = mid
      else lo = mid
    }
    return hi
  }

  /**
   * Microseconds until `cost` fits, in floating point with the interval taken as exactly
   * linear in age: the excess is piecewise linear and non-increasing in time, with kinks
   * where the debt is paid, where the interval falls to capacity·T and where warm-up ends.
   * Walk the pieces and solve the first one that reaches zero.
   */
  #estimate(age: number, cost: number): void {
    const at = S[1]!
    const t = S[4]!
    const ticks = this.ticks
    const window = this.window
    const warmUp = this.#warmUp
    const tau = this.capacity * window
    const debt = at < t ? 0 : (at - t) * ticks + S[2]!
    // The kinks, in order, without an array: a decision allocates nothing.
    let k1 = debt / ticks
    let k2 = warmUp - age
    let k3 = this.capacity < COLD_FACTOR ? this.#fullBurstAge - age : Number.POSITIVE_INFINITY
    const kinks = this.capacity < COLD_FACTOR ? 3 : 2
    let swap = k1
    if (k1 > k2) {
      k1 = k2
      k2 = swap
    }
    if (k2 > k3) {
      swap = k2
      k2 = k3
      k3 = swap
    }
    if (k1 > k2) {
      swap = k1
      k1 = k2
      k2 = swap
    }
    let from = 0
    let before = 0
    // i = -1 is the excess now; then the excess at each kink, as one expression.
    for (let i = -1; i < kinks; i++) {
      const to = i === -1 ? 0 : i === 0 ? k1 : i === 1 ? k2 : k3
      if (i >= 0 && to <= from) continue
      const a = age + to
      const interval =
        a >= warmUp ? window : window * (COLD_FACTOR - ((COLD_FACTOR - 1) * a) / warmUp)
      const after = Math.max(0, debt - to * ticks) + cost * interval - Math.max(tau, interval)
      if (i === -1) {
        before = after
        continue
      }
      if (after <= 0) {
        S[5] = from + (before * (to - from)) / (before - after)
        return
      }
      from = to
      before = after
    }
    S[5] = from
  }

  /**
   * A reservation due at `at`: while warming, the permits may be due past `tat` (the
   * interval shrinks until they fit), so `tat` moves from max(tat, at), never from
   * earlier: that would admit them before their time.
   */
  override reserve(row: number, now: number, at: number, cost: number): void {
    super.reserve(row, Math.max(now, at), at, cost)
  }

  override read(row: number, into: Float64Array | number[], at = 0): void {
    super.read(row, into, at)
    into[at + 2] = this.#created[row]!
  }

  override write(row: number, from: ArrayLike<number>, at = 0): void {
    super.write(row, from, at)
    this.#created[row] = from[at + 2] ?? 0
  }

  /** While warming, τ may shrink as the row ages: the first microsecond a cost of 0 fits. */
  protected override paidOffUs(row: number, t: number): number {
    return t + this.waitUs(row, t, 0)
  }

  protected override createdAt(row: number, t: number): number {
    return this.#createdOf(row, t)
  }

  protected override adoptCreated(row: number, created: number): void {
    this.#created[row] = created
  }

  protected override intervalTicks(created: number, t: number): bigint {
    this.#interval(t - created)
    return BigInt(S[0]!)
  }

  /** capacity·T, or one interval when that is more (as `#tolerance`). */
  protected override toleranceTicks(interval: bigint): bigint {
    const tau = BigInt(this.capacity) * BigInt(this.window)
    return interval > tau ? interval : tau
  }
}
