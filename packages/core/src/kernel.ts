import type { Carry, NormalizedRateSpec } from './types'

/**
 * What a decision leaves to report, written by a kernel into an object its caller owns
 * (one per store or limiter, reused for every decision).
 */
export interface Quota {
  /** Permits `take` could take right now, after the decision (never negative). */
  available: number
  /**
   * Milliseconds until more quota becomes available (draft -10's `t`): until one more
   * permit than `available` passes; 0 when the state is full.
   */
  resetMs: number
  /** For a refusal, milliseconds until the permits asked for would pass (`Infinity`: never). */
  retryAfterMs: number
  /** The receipt of the permits taken (meaningful after an admission). */
  receipt: number
}

/**
 * One time-based algorithm's decisions, defined once: every limiter, store and lease runs
 * this, and the Redis scripts are ports of it. State lives in rows of typed arrays the
 * kernel owns, one row per key (a limiter has one); the caller keeps its own map from keys
 * to rows and passes the time of each call, so a decision is a function of the state, the
 * time and the cost, as golang.org/x/time/rate's `reserveN(now, n)` is.
 *
 * Times are milliseconds (fractions allowed) and are decided on in whole microseconds
 * (`micros`), the unit every store shares (Redis's `TIME`); reported waits are whole
 * microseconds, rounded up. Row `-1` stands for a key with no row: fresh state, read-only
 * (`available`, `quota`, `wait`).
 *
 * Costs are non-negative integers; `take(row, now, 0)` admits unless the row is in debt.
 * Debt is what `force` takes beyond the limit: a bucket's `tat` past `now + τ`, a window's
 * count above its limit, kept until those permits have been paid off or left the window.
 *
 * @example
 * ```ts
 * const kernel = rateKernel(normalizeSpec({ algorithm: 'token-bucket', limit: 3, window: '1s' }))
 * kernel.resize(1)
 * kernel.clear(0, 0)
 * const quota: Quota = { available: 0, resetMs: 0, retryAfterMs: 0, receipt: 0 }
 * kernel.take(0, 0, 1, quota) // true; quota.available === 2, quota.resetMs === 333.334
 * ```
 */
export interface RateKernel {
  readonly spec: NormalizedRateSpec
  /** Warm-up: a row's state is its age, so it never becomes fresh again. */
  readonly ageless: boolean
  /**
   * The most permits a fresh row gives at once (capacity or limit); for a warm-up bucket,
   * whose fresh rows start cold, the least it can (a third of its capacity, at least one).
   */
  readonly freshPermits: number
  /** The largest cost that can ever be admitted (capacity or limit); more waits forever. */
  readonly capacity: number
  /** Numbers `read` writes and `write` reads for one row. */
  readonly width: number
  /** Rows allocated. */
  readonly rows: number
  /** Makes room for `rows` rows (never fewer than now), keeping those there. */
  resize(rows: number): void
  /** Gives `row` fresh state, as a limiter made at `now` has. */
  clear(row: number, now: number): void
  /** Whether `row` holds nothing a fresh one would not: dropping it loses nothing. */
  isFresh(row: number, now: number): boolean
  /** Permits `take` could take at `now`. */
  available(row: number, now: number): number
  /**
   * Takes `cost` permits if they fit at `now` and says whether it did; with `out`, also
   * reports the state after the decision (as `quota` would).
   */
  take(row: number, now: number, cost: number, out?: Quota): boolean
  /** Whether `take(row, now, cost)` would pass, taking nothing (a row in debt fits no cost, not even 0). */
  fits(row: number, now: number, cost: number): boolean
  /** Takes `cost` permits whether they fit or not: debt (a penalty, a settle above its estimate). */
  force(row: number, now: number, cost: number): void
  /** Reports the row at `now` after a decision for `cost` that went `allowed`. */
  quota(row: number, now: number, cost: number, allowed: boolean, out: Quota): void
  /** Milliseconds from `now` until `take(cost)` would pass: 0 now, `Infinity` never. */
  wait(row: number, now: number, cost: number): number
  /** Milliseconds from `now` until the row is fresh (full) again. */
  untilFresh(row: number, now: number): number
  /**
   * Gives back `cost` permits, never beyond fresh. With the `receipt` of their take, only
   * those that still count: permits whose window, slot or bucket period has passed are
   * not given back.
   */
  refund(row: number, now: number, cost: number, receipt?: number): void
  /**
   * The receipt of the row's latest take: the window (fixed window), slot generation
   * (sliding window) or theoretical arrival time in µs (GCRA) its permits count in.
   */
  receipt(row: number): number
  /** The row's state as `width` numbers (`-Infinity` allowed), into `into` from `at`. */
  read(row: number, into: Float64Array | number[], at?: number): void
  /** Replaces the row's state with numbers `read` wrote (from this kernel or a twin). */
  write(row: number, from: ArrayLike<number>, at?: number): void
  /**
   * Gives `row` the state `from` (a kernel of another spec of the same algorithm) holds in
   * `fromRow` (-1: a key with no row), carried over at `now` as `carry` says: what a key
   * keeps when its policy is reconfigured. A pure function of the old spec and row, the new
   * spec, the time and the mode, in integers, so every process and store computes the same
   * row; with an unchanged spec it changes no decision (`'reset'` aside), so converting
   * twice is converting once. A fresh row stays fresh.
   */
  carry(row: number, now: number, from: RateKernel, fromRow: number, carry: Carry): void
}

/**
 * The refusal to carry state between two algorithms: their rows mean different things.
 *
 * @example
 * ```ts
 * throw carryMismatch(kernel.spec, from.spec)
 * ```
 */
export function carryMismatch(to: NormalizedRateSpec, from: NormalizedRateSpec): TypeError {
  return new TypeError(
    `carry: cannot carry '${from.algorithm}' state into a '${to.algorithm}' kernel; state carries over only between specs of one algorithm`,
  )
}
