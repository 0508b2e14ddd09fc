/**
 * How the leases bench measures admitted against a limit from what its processes report
 * (admissions per millisecond since a window boundary).
 */
import type { Algorithm } from './worker'

/** The policy the processes shared: `slots` is a sliding window's. */
export interface Measured {
  readonly limit: number
  readonly windowMs: number
  readonly slots: number
}

const int = (n: number) => Math.round(n).toLocaleString('en-US')

/**
 * The unit an admission must fall in entirely (call and answer) to be placed: its window,
 * its slot, or for a bucket 50 ms (intervals are then measured in whole units).
 *
 * @example
 * ```ts
 * unitOf('sliding-window', { limit: 100, windowMs: 2000, slots: 10 }) // 200
 * ```
 */
export function unitOf(algorithm: Algorithm, policy: Measured): number {
  if (algorithm === 'fixed-window') return policy.windowMs
  if (algorithm === 'sliding-window') return policy.windowMs / policy.slots
  return 50
}

/**
 * The worst window over `counts` (admissions per millisecond since a window boundary): per
 * window (fixed), per `slots + 1` consecutive slots (sliding: what its count covers, the
 * run's edges included), per interval of whole units [a, b] against capacity + rate ×
 * (b − a) (token bucket, its capacity the limit). `over` is what it admitted beyond that.
 *
 * @example
 * ```ts
 * worstOf('fixed-window', new Float64Array([3, 4]), { limit: 5, windowMs: 1, slots: 1 })
 * // { worst: 4, over: 0, text: '4' }
 * ```
 */
export function worstOf(
  algorithm: Algorithm,
  counts: Float64Array,
  policy: Measured,
): { worst: number; over: number; text: string } {
  const { limit, windowMs } = policy
  const unit = unitOf(algorithm, policy)
  const perUnit: number[] = Array.from({ length: Math.ceil(counts.length / unit) }, () => 0)
  counts.forEach((count, ms) => {
    perUnit[Math.floor(ms / unit)]! += count
  })
  if (algorithm === 'token-bucket') {
    const rate = limit / windowMs
    let worst = { over: Number.NEGATIVE_INFINITY, admitted: 0, ms: 0 }
    for (let a = 0; a < perUnit.length; a++) {
      let sum = 0
      for (let b = a; b < perUnit.length; b++) {
        sum += perUnit[b]!
        const ms = (b - a + 1) * unit
        const over = sum - limit - rate * ms
        if (over > worst.over) worst = { over, admitted: sum, ms }
      }
    }
    return {
      worst: worst.admitted,
      over: Math.max(0, worst.over),
      text: `${int(worst.admitted)} in ${int(worst.ms)} ms (allowance ${int(limit + rate * worst.ms)})`,
    }
  }
  const span = algorithm === 'sliding-window' ? policy.slots + 1 : 1
  let worst = 0
  // Windows overlapping the run: before it nothing was offered (one decision per process).
  for (let u = 1 - span; u < perUnit.length; u++) {
    let sum = 0
    for (let k = Math.max(0, u); k < Math.min(perUnit.length, u + span); k++) sum += perUnit[k]!
    worst = Math.max(worst, sum)
  }
  return { worst, over: Math.max(0, worst - limit), text: int(worst) }
}
