import { type AlgorithmDefinition, buildLimiter } from '../algorithm'
import { type GcraConfig, GcraLimiter, readGcraWindow } from '../gcra/gcra'
import { invalidPermits, isPermitCount } from '../options'
import type { NormalizedSpec, RateLimiter, WarmUpTokenBucketOptions } from '../types'
import { readDuration, readPositiveInteger } from '../validation'

type WarmUpSpec = Extract<NormalizedSpec, { algorithm: 'warm-up' }>

/** Cold intervals are 3·T: fixed, as in Alibaba Sentinel, so there is one curve to regress. */
const COLD_FACTOR = 3

/** Scratch for `delayAt`'s kinks (single-threaded, and it calls nothing that reenters). */
const KINKS = new Float64Array(3)

/**
 * While warming, the interval is fractional, so `tat − now` carries rounding of a few
 * ulps of the tick time itself: allow 8 ulps, still far below one permit.
 */
const RELATIVE_ROUNDING = 2 ** -49

export class WarmUpLimiter extends GcraLimiter {
  /**
   * When the limiter was made: its age sets the rate. With `tat`, its whole state, which
   * the keyed kernel (`keyed.ts`) keeps per key in a slab and binds here.
   */
  createdMs: number
  private readonly warmUpMs: number
  /** capacity·T in ticks: the warm burst budget. */
  private readonly warmTau: number

  constructor(config: GcraConfig, warmUpMs: number) {
    super(config)
    this.createdMs = config.clock.now()
    this.warmUpMs = warmUpMs
    this.warmTau = config.capacity * config.windowMs
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits(`${this.factory}.tryAcquire`, permits)
    }
    const ms = this.clock.now()
    const now = ms * this.scale
    const interval = this.intervalAt(ms)
    const tau = Math.max(this.warmTau, interval)
    const next = Math.max(this.tat, now) + permits * interval
    if (next - now > tau + this.roundingAt(now)) return false
    this.tat = next
    return true
  }

  /** `[tat, createdMs]`: the bucket and the age the warm-up is measured from. */
  override exportState(): number[] {
    return [this.tat, this.createdMs]
  }

  override importState(state: readonly number[]): void {
    super.importState(state)
    this.createdMs = state[1] ?? this.clock.now()
  }

  protected override roundingAt(now: number): number {
    return this.slack + Math.abs(now) * RELATIVE_ROUNDING
  }

  // Linear in the limiter's age, not its traffic: a limiter created two minutes ago
  // with a one-minute warm-up is at full rate even if it has served nothing.
  protected intervalAt(ms: number): number {
    const age = ms - this.createdMs
    if (age >= this.warmUpMs) return this.steady
    return this.steady * (COLD_FACTOR - ((COLD_FACTOR - 1) * age) / this.warmUpMs)
  }

  // τ = capacity·T clamped to one current interval: the burst grows from capacity/3 to
  // capacity, and capacity 1 still admits one permit at a time while cold.
  protected toleranceAt(ms: number): number {
    const interval = this.intervalAt(ms)
    return Math.max(this.warmTau, interval)
  }

  /** How far `permits` overshoot the tolerance at `ms`, in ticks (≤ 0: admitted). */
  private excessAt(ms: number, permits: number): number {
    const now = ms * this.scale
    const debt = this.tat > now ? this.tat - now : 0
    return debt + permits * this.intervalAt(ms) - this.toleranceAt(ms)
  }

  // The excess is piecewise linear and non-increasing in time, with kinks where the debt
  // reaches zero, where the interval falls to capacity·T and where the warm-up ends:
  // walk the pieces and solve the first one that crosses zero.
  protected delayAt(ms: number, permits: number): number {
    if (this.admitsAt(ms, permits)) return 0
    // The kinks in ascending order, in a shared scratch array: a store asks this on every
    // decision, which must not allocate.
    const kinks = KINKS
    let count = 2
    kinks[0] = this.tat / this.scale
    kinks[1] = this.createdMs + this.warmUpMs
    if (this.capacity < COLD_FACTOR) {
      kinks[count++] =
        this.createdMs + (this.warmUpMs * (COLD_FACTOR - this.capacity)) / (COLD_FACTOR - 1)
    }
    for (let i = 1; i < count; i++) {
      const kink = kinks[i] as number
      let j = i - 1
      for (; j >= 0 && (kinks[j] as number) > kink; j--) kinks[j + 1] = kinks[j] as number
      kinks[j + 1] = kink
    }
    let from = ms
    let excessFrom = this.excessAt(ms, permits)
    for (let k = 0; k < count; k++) {
      const to = kinks[k] as number
      if (excessFrom <= 0) break
      if (to <= from) continue
      const excessTo = this.excessAt(to, permits)
      if (excessTo <= 0) {
        const at = from + (excessFrom * (to - from)) / (excessFrom - excessTo)
        return this.settleDelay(ms, at - ms, permits)
      }
      from = to
      excessFrom = excessTo
    }
    // Either `from` is already admitted, or it is past every kink, where the bucket is
    // fresh and warm and any permits ≤ capacity pass.
    return this.settleDelay(ms, from - ms, permits)
  }
}

/** The warm-up token bucket's entry in the algorithm registry. */
export const warmUpAlgorithm: AlgorithmDefinition<WarmUpSpec> = {
  algorithm: 'warm-up',
  factory: 'warmUpTokenBucket',
  timed: true,
  options: ['limit', 'window', 'capacity', 'warmUp'],
  normalize(options, label, prefix = '') {
    const limit = readPositiveInteger(label, `${prefix}limit`, options.limit)
    const capacity =
      options.capacity === undefined
        ? limit
        : readPositiveInteger(label, `${prefix}capacity`, options.capacity)
    // The cold interval is 3·T, so the kernel's largest product is 3·window ticks.
    const window = readGcraWindow(label, prefix, options.window, Math.max(limit, capacity, 3))
    if (options.warmUp === undefined) {
      throw new TypeError(
        `${label}: "${prefix}warmUp" is required (a duration such as '30s'), got undefined`,
      )
    }
    const warmUp = readDuration(label, `${prefix}warmUp`, options.warmUp)
    return { algorithm: 'warm-up', limit, window, capacity, warmUp }
  },
  create(spec, name, clock) {
    return new WarmUpLimiter(
      {
        factory: 'warmUpTokenBucket',
        name,
        clock,
        limit: spec.limit,
        windowMs: spec.window,
        capacity: spec.capacity,
      },
      spec.warmUp,
    )
  },
}

/**
 * A token bucket that starts cold: its interval starts at 3·T (a third of the rate) and
 * shrinks linearly to T = window/limit over `warmUp`, measured from creation. The burst
 * budget grows with it from capacity/3 to `capacity` (default `limit`), never below one
 * permit. Use it for a downstream that needs time to warm caches or connection pools
 * after a deploy. A `warmUp` of 0 is a plain token bucket.
 *
 * @example
 * ```ts
 * const limiter = warmUpTokenBucket({ limit: 300, window: '1s', warmUp: '2m' })
 * limiter.tryAcquire() // 100/s now, 200/s after one minute, 300/s from two minutes on
 * ```
 */
export function warmUpTokenBucket(options: WarmUpTokenBucketOptions): RateLimiter {
  return buildLimiter(warmUpAlgorithm, options) as RateLimiter
}
