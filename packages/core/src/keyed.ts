/**
 * Per-key state of the five time-based limiters, kept in typed arrays with one row per
 * key (exported from `@sluice/core/internal`): what a store that keeps many clients in one process uses
 * instead of a limiter object per key. A token or leaky bucket's row is one number, a
 * fixed window's two, a warm-up bucket's two, a sliding window's `slots + 2` small
 * integers (as narrow as its limit allows) and one number; rows live in slabs that grow
 * as keys arrive.
 *
 * Each kernel decides with one limiter of the algorithm, the same class users get, bound
 * to a key's row for the length of a call: the decisions, waits and receipts are the
 * limiter's own, to the last rounding. The caller passes the time of each call (one
 * reading of its clock for a whole request) and keeps its own map from keys to rows.
 *
 * The four kernel classes repeat the same six short methods on purpose. Shared through a
 * base class, those methods' calls see every algorithm a process uses and turn polymorphic:
 * a process interleaving the five algorithms decided 20–30% slower that way (26–32 ns
 * against 35–42 ns per decision, measured with `keyedLimiter` alone in one loop).
 *
 * For sluice's stores (`memoryStore`) and for authors of stores; users of the limiters
 * never need it.
 *
 * @example
 * ```ts
 * const kernel = keyedLimiter(normalizeSpec({ algorithm: 'sliding-window', limit: 100, window: '1m' }))
 * kernel.resize(1024)
 * kernel.clear(0, clock.now())
 * const quota: Quota = { available: 0, resetMs: 0, retryAfterMs: 0, receipt: 0 }
 * if (kernel.decide(0, 1, clock.now(), quota)) console.log(`${quota.available} left`)
 * ```
 *
 * @module
 */
import { algorithmDefinition } from './algorithms'
import type { FixedWindowLimiter } from './fixed-window/fixed-window'
import type { ConstantGcraLimiter } from './gcra/gcra'
import type { Quota } from './kernel'
import { type Counts, countArray, type SlidingWindowLimiter } from './sliding-window/sliding-window'
import type { Clock, NormalizedRateSpec } from './types'
import type { WarmUpLimiter } from './warm-up/warm-up-token-bucket'

/**
 * One time-based policy's per-key state, in rows. Row `-1` stands for a key with no row:
 * fresh state, read-only (`available`, `quota`).
 */
export interface KeyedLimiter {
  /** A warm-up bucket's state is its age: its rows never become fresh again. */
  readonly ageless: boolean
  /**
   * The most permits a fresh row can give at once (capacity or limit); for a warm-up
   * bucket, whose fresh rows start cold, the least it can (a third of its capacity, and
   * at least one).
   */
  readonly freshPermits: number
  /** Rows allocated. */
  readonly rows: number
  /** Makes room for `rows` rows (never fewer than now), keeping those there. */
  resize(rows: number): void
  /** Gives `row` fresh state, as a limiter made at `now` has. */
  clear(row: number, now: number): void
  /** Whether `row` holds nothing a fresh limiter would not: dropping it loses nothing. */
  isFresh(row: number, now: number): boolean
  /** `availablePermits()` of the row at `now`. */
  available(row: number, now: number): number
  /** `tryAcquire(permits)` on the row at `now`. */
  take(row: number, permits: number, now: number): boolean
  /** Fills `out` with the row's quota at `now`, after a decision that went `allowed`. */
  quota(row: number, permits: number, allowed: boolean, now: number, out: Quota): void
  /** `take` and `quota` in one. */
  decide(row: number, permits: number, now: number, out: Quota): boolean
  /** `retryAfterMs(permits)` of the row at `now`. */
  wait(row: number, permits: number, now: number): number
  /** `refund(permits, receipt)` on the row at `now`. */
  refund(row: number, permits: number, receipt: number | undefined, now: number): void
}

/** A clock that reads what it is told: every kernel call sets the time of the request. */
class StoppedClock implements Clock {
  time = 0

  now(): number {
    return this.time
  }

  sleep(): Promise<void> {
    return Promise.reject(new Error('keyed limiters decide without waiting'))
  }
}

function limiterFor<L>(spec: NormalizedRateSpec, clock: Clock): L {
  const definition = algorithmDefinition(spec.algorithm)
  return (definition.create as (s: NormalizedRateSpec, n: string, c: Clock) => unknown)(
    spec,
    spec.algorithm,
    clock,
  ) as L
}

function grown<A extends Float64Array | Counts>(array: A, length: number, make: (n: number) => A) {
  if (array.length >= length) return array
  const bigger = make(length)
  bigger.set(array as never)
  return bigger
}

/** Token and leaky bucket: one number per key, the theoretical arrival time. */
class ConstantGcraRows implements KeyedLimiter {
  readonly ageless = false
  readonly freshPermits: number
  rows = 0
  readonly #clock = new StoppedClock()
  readonly #limiter: ConstantGcraLimiter
  /** Ticks per millisecond, to compare a `tat` with a time. */
  readonly #scale: number
  #tat = new Float64Array(0)

  constructor(spec: NormalizedRateSpec) {
    this.#limiter = limiterFor(spec, this.#clock)
    this.#scale = this.#limiter.limit
    this.freshPermits = this.#limiter.capacity
  }

  resize(rows: number): void {
    this.#tat = grown(this.#tat, rows, (n) => new Float64Array(n))
    this.rows = Math.max(this.rows, rows)
  }

  clear(row: number): void {
    this.#tat[row] = Number.NEGATIVE_INFINITY
  }

  isFresh(row: number, now: number): boolean {
    return (this.#tat[row] as number) <= now * this.#scale
  }

  #bind(row: number, now: number): ConstantGcraLimiter {
    this.#clock.time = now
    const limiter = this.#limiter
    limiter.tat = row < 0 ? Number.NEGATIVE_INFINITY : (this.#tat[row] as number)
    return limiter
  }

  available(row: number, now: number): number {
    return this.#bind(row, now).availablePermits()
  }

  wait(row: number, permits: number, now: number): number {
    return this.#bind(row, now).retryAfterMs(permits)
  }

  take(row: number, permits: number, now: number): boolean {
    const limiter = this.#bind(row, now)
    if (!limiter.tryAcquire(permits)) return false
    this.#tat[row] = limiter.tat
    return true
  }

  quota(row: number, permits: number, allowed: boolean, now: number, out: Quota): void {
    const limiter = this.#bind(row, now)
    limiter.quota(permits, allowed, out)
    out.receipt = limiter.tat
  }

  decide(row: number, permits: number, now: number, out: Quota): boolean {
    const limiter = this.#bind(row, now)
    const allowed = limiter.tryAcquire(permits)
    if (allowed) this.#tat[row] = limiter.tat
    limiter.quota(permits, allowed, out)
    out.receipt = limiter.tat
    return allowed
  }

  refund(row: number, permits: number, receipt: number | undefined, now: number): void {
    const limiter = this.#bind(row, now)
    limiter.refund(permits, receipt)
    this.#tat[row] = limiter.tat
  }
}

/** Warm-up bucket: the theoretical arrival time and the creation time, per key. */
class WarmUpRows implements KeyedLimiter {
  readonly ageless = true
  readonly freshPermits: number
  rows = 0
  readonly #clock = new StoppedClock()
  readonly #limiter: WarmUpLimiter
  #tat = new Float64Array(0)
  #created = new Float64Array(0)

  constructor(spec: NormalizedRateSpec) {
    this.#limiter = limiterFor(spec, this.#clock)
    this.freshPermits = this.available(-1, 0)
  }

  resize(rows: number): void {
    this.#tat = grown(this.#tat, rows, (n) => new Float64Array(n))
    this.#created = grown(this.#created, rows, (n) => new Float64Array(n))
    this.rows = Math.max(this.rows, rows)
  }

  clear(row: number, now: number): void {
    this.#tat[row] = Number.NEGATIVE_INFINITY
    this.#created[row] = now
  }

  isFresh(): boolean {
    return false
  }

  #bind(row: number, now: number): WarmUpLimiter {
    this.#clock.time = now
    const limiter = this.#limiter
    if (row < 0) {
      limiter.tat = Number.NEGATIVE_INFINITY
      limiter.createdMs = now
    } else {
      limiter.tat = this.#tat[row] as number
      limiter.createdMs = this.#created[row] as number
    }
    return limiter
  }

  available(row: number, now: number): number {
    return this.#bind(row, now).availablePermits()
  }

  wait(row: number, permits: number, now: number): number {
    return this.#bind(row, now).retryAfterMs(permits)
  }

  take(row: number, permits: number, now: number): boolean {
    const limiter = this.#bind(row, now)
    if (!limiter.tryAcquire(permits)) return false
    this.#tat[row] = limiter.tat
    return true
  }

  quota(row: number, permits: number, allowed: boolean, now: number, out: Quota): void {
    const limiter = this.#bind(row, now)
    limiter.quota(permits, allowed, out)
    out.receipt = limiter.tat
  }

  decide(row: number, permits: number, now: number, out: Quota): boolean {
    const limiter = this.#bind(row, now)
    const allowed = limiter.tryAcquire(permits)
    if (allowed) this.#tat[row] = limiter.tat
    limiter.quota(permits, allowed, out)
    out.receipt = limiter.tat
    return allowed
  }

  refund(row: number, permits: number, receipt: number | undefined, now: number): void {
    const limiter = this.#bind(row, now)
    limiter.refund(permits, receipt)
    this.#tat[row] = limiter.tat
  }
}

/**
 * Sliding window: a ring of `slots + 1` counts and their sum per key, in one slab of the
 * narrowest integers that hold the limit, and the ring's newest generation.
 */
class SlidingWindowRows implements KeyedLimiter {
  readonly ageless = false
  readonly freshPermits: number
  rows = 0
  readonly #clock = new StoppedClock()
  readonly #limiter: SlidingWindowLimiter
  readonly #width: number
  #counts: Counts
  #heads = new Float64Array(0)
  /** The ring of a key with no row: all zeros, only ever read. */
  readonly #fresh: Counts

  constructor(spec: Extract<NormalizedRateSpec, { algorithm: 'sliding-window' }>) {
    this.#limiter = limiterFor(spec, this.#clock)
    this.#width = spec.slots + 2
    this.#counts = countArray(spec.limit, 0)
    this.#fresh = countArray(spec.limit, this.#width)
    this.freshPermits = spec.limit
  }

  resize(rows: number): void {
    const { limit } = this.#limiter
    this.#counts = grown(this.#counts, rows * this.#width, (n) => countArray(limit, n))
    this.#heads = grown(this.#heads, rows, (n) => new Float64Array(n))
    this.rows = Math.max(this.rows, rows)
  }

  clear(row: number): void {
    // A ring whose head is before every generation counts nothing, whatever its buckets
    // hold: the first take claims (zeroes) them all and takes their counts off the sum.
    this.#heads[row] = Number.NEGATIVE_INFINITY
  }

  #bind(row: number, now: number): SlidingWindowLimiter {
    this.#clock.time = now
    const limiter = this.#limiter
    if (row < 0) limiter.bindRing(this.#fresh, 0, Number.NEGATIVE_INFINITY)
    else limiter.bindRing(this.#counts, row * this.#width, this.#heads[row] as number)
    return limiter
  }

  isFresh(row: number, now: number): boolean {
    const limiter = this.#bind(row, now)
    return limiter.availablePermits() === limiter.limit
  }

  available(row: number, now: number): number {
    return this.#bind(row, now).availablePermits()
  }

  wait(row: number, permits: number, now: number): number {
    return this.#bind(row, now).retryAfterMs(permits)
  }

  take(row: number, permits: number, now: number): boolean {
    const limiter = this.#bind(row, now)
    if (!limiter.tryAcquire(permits)) return false
    this.#heads[row] = limiter.head
    return true
  }

  quota(row: number, permits: number, allowed: boolean, now: number, out: Quota): void {
    const limiter = this.#bind(row, now)
    limiter.quota(permits, allowed, out)
    out.receipt = limiter.head
  }

  decide(row: number, permits: number, now: number, out: Quota): boolean {
    const limiter = this.#bind(row, now)
    const allowed = limiter.tryAcquire(permits)
    if (allowed) this.#heads[row] = limiter.head
    limiter.quota(permits, allowed, out)
    out.receipt = limiter.head
    return allowed
  }

  refund(row: number, permits: number, receipt: number | undefined, now: number): void {
    this.#bind(row, now).refund(permits, receipt)
  }
}

/** Fixed window: the window counted in and its count, per key. */
class FixedWindowRows implements KeyedLimiter {
  readonly ageless = false
  readonly freshPermits: number
  rows = 0
  readonly #clock = new StoppedClock()
  readonly #limiter: FixedWindowLimiter
  #state = new Float64Array(0)

  constructor(spec: NormalizedRateSpec) {
    this.#limiter = limiterFor(spec, this.#clock)
    this.freshPermits = this.#limiter.limit
  }

  resize(rows: number): void {
    this.#state = grown(this.#state, rows * 2, (n) => new Float64Array(n))
    this.rows = Math.max(this.rows, rows)
  }

  clear(row: number): void {
    this.#state[2 * row] = Number.NEGATIVE_INFINITY
    this.#state[2 * row + 1] = 0
  }

  #bind(row: number, now: number): FixedWindowLimiter {
    this.#clock.time = now
    const limiter = this.#limiter
    if (row < 0) {
      limiter.window = Number.NEGATIVE_INFINITY
      limiter.count = 0
    } else {
      limiter.window = this.#state[2 * row] as number
      limiter.count = this.#state[2 * row + 1] as number
    }
    return limiter
  }

  #save(row: number, limiter: FixedWindowLimiter): void {
    this.#state[2 * row] = limiter.window
    this.#state[2 * row + 1] = limiter.count
  }

  isFresh(row: number, now: number): boolean {
    const limiter = this.#bind(row, now)
    return limiter.availablePermits() === limiter.limit
  }

  available(row: number, now: number): number {
    return this.#bind(row, now).availablePermits()
  }

  wait(row: number, permits: number, now: number): number {
    return this.#bind(row, now).retryAfterMs(permits)
  }

  take(row: number, permits: number, now: number): boolean {
    const limiter = this.#bind(row, now)
    if (!limiter.tryAcquire(permits)) return false
    this.#save(row, limiter)
    return true
  }

  quota(row: number, permits: number, allowed: boolean, now: number, out: Quota): void {
    const limiter = this.#bind(row, now)
    limiter.quota(permits, allowed, out)
    out.receipt = limiter.window
  }

  decide(row: number, permits: number, now: number, out: Quota): boolean {
    const limiter = this.#bind(row, now)
    const allowed = limiter.tryAcquire(permits)
    if (allowed) this.#save(row, limiter)
    limiter.quota(permits, allowed, out)
    out.receipt = limiter.window
    return allowed
  }

  refund(row: number, permits: number, receipt: number | undefined, now: number): void {
    const limiter = this.#bind(row, now)
    limiter.refund(permits, receipt)
    this.#save(row, limiter)
  }
}

/**
 * The keyed kernel of a normalized time-based spec.
 *
 * @example
 * ```ts
 * const kernel = keyedLimiter({ algorithm: 'token-bucket', limit: 10, window: 1000, capacity: 10 })
 * ```
 */
export function keyedLimiter(spec: NormalizedRateSpec): KeyedLimiter {
  switch (spec.algorithm) {
    case 'token-bucket':
    case 'leaky-bucket':
      return new ConstantGcraRows(spec)
    case 'warm-up':
      return new WarmUpRows(spec)
    case 'sliding-window':
      return new SlidingWindowRows(spec)
    case 'fixed-window':
      return new FixedWindowRows(spec)
    default:
      return spec satisfies never
  }
}
