/**
 * Integer arithmetic the kernels need beyond 2^53: a product of two safe integers divided
 * by a third. Limits and windows may each be as large as 2^53, so `permits × window` (in
 * microseconds) can pass it: 10^10 tokens a day is 8.64·10^20 tick-microseconds. The
 * common case (a product that fits) is plain doubles; the rest goes through BigInt, which
 * only very large policies ever reach. Results land in {@link PAIR} so the hot path
 * allocates nothing.
 *
 * @module
 */

const MAX_SAFE = Number.MAX_SAFE_INTEGER

/**
 * Where {@link mulDivMod} leaves its answer: `[quotient, remainder]`. One per process;
 * read it before the next call (the kernels call nothing in between).
 */
export const PAIR = new Float64Array(2)

/**
 * `floor(a·b / d)` into `PAIR[0]` and `a·b mod d` into `PAIR[1]`, exactly, for safe
 * integers `a, b ≥ 0` and `d ≥ 1` whose quotient is a safe integer.
 *
 * @example
 * ```ts
 * mulDivMod(10_000_000_000, 86_400_000_000, 10_000_000_000) // PAIR: [86_400_000_000, 0]
 * ```
 */
export function mulDivMod(a: number, b: number, d: number): void {
  const product = a * b
  if (product <= MAX_SAFE) {
    // Exact: for a numerator below 2^53 the division rounds to no integer it does not reach.
    const q = Math.floor(product / d)
    PAIR[0] = q
    PAIR[1] = product - q * d
    return
  }
  const big = BigInt(a) * BigInt(b)
  const divisor = BigInt(d)
  PAIR[0] = Number(big / divisor)
  PAIR[1] = Number(big % divisor)
}

/**
 * `floor((a·b + c) / d)` exactly, for safe integers `a, b, c ≥ 0` and `d ≥ 1` whose
 * quotient is a safe integer.
 *
 * @example
 * ```ts
 * mulAddDiv(3, 1000, 999, 1000) // 3
 * ```
 */
export function mulAddDiv(a: number, b: number, c: number, d: number): number {
  const sum = a * b + c
  if (sum <= MAX_SAFE) return Math.floor(sum / d)
  return Number((BigInt(a) * BigInt(b) + BigInt(c)) / BigInt(d))
}

/**
 * `ceil(a·b / d)` exactly, for safe integers `a, b ≥ 0` and `d ≥ 1`.
 *
 * @example
 * ```ts
 * mulDivCeil(2, 1000, 3) // 667
 * ```
 */
export function mulDivCeil(a: number, b: number, d: number): number {
  mulDivMod(a, b, d)
  return PAIR[1]! > 0 ? PAIR[0]! + 1 : PAIR[0]!
}

/**
 * Milliseconds (fractions allowed) as whole microseconds, the kernels' unit of time:
 * exact for a clock that counts in microseconds or coarser (a `ManualClock` set to
 * 123_456.789), and the nearest microsecond for one that counts finer (`performance.now()`).
 *
 * @example
 * ```ts
 * micros(0.1) // 100
 * ```
 */
export function micros(ms: number): number {
  return Math.round(ms * 1000)
}
