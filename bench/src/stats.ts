/** Median and range of repeated samples. */
export interface Summary {
  readonly median: number
  readonly min: number
  readonly max: number
  readonly n: number
}

/**
 * Summarises samples by their median (robust to the odd sample a neighbour's burst of
 * CPU spoils) and their range, which is shown so a reader can judge the noise.
 *
 * @example
 * ```ts
 * summarize([3, 1, 2]) // { median: 2, min: 1, max: 3, n: 3 }
 * ```
 */
export function summarize(samples: readonly number[]): Summary {
  if (samples.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 }
  const sorted = [...samples].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]!, n: sorted.length }
}

/**
 * The p-th percentile (0–100) of unsorted values, nearest-rank.
 *
 * @example
 * ```ts
 * percentile([5, 1, 4, 2, 3], 99) // 5
 * ```
 */
export function percentile(values: ArrayLike<number>, p: number): number {
  const sorted = Float64Array.from(values).sort()
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1]!
}

/**
 * Ratios of paired samples (a[i] / b[i]), summarised: taken round by round, so a slow
 * patch of the machine that hits both sides of a round cancels out.
 *
 * @example
 * ```ts
 * pairedRatio([2, 4], [1, 2]).median // 2
 * ```
 */
export function pairedRatio(a: readonly number[], b: readonly number[]): Summary {
  const ratios: number[] = []
  for (let i = 0; i < Math.min(a.length, b.length); i++) ratios.push(a[i]! / b[i]!)
  return summarize(ratios)
}
