/**
 * Integer arithmetic the kernels need beyond 2^53: a product of two safe integers divided
 * by a third. Limits and windows may each be as large as 2^53, so `permits × window` (in
 * ticks) can pass it: 10^10 tokens a day is 8.64·10^20 tick-microseconds. A product that
 * fits is plain doubles; a larger one is split exactly into two doubles (Dekker's
 * product), the quotient estimated in floating point and corrected by its exact
 * remainder: no BigInt and nothing allocated (results land in {@link PAIR}), except for
 * absurd policies whose numbers are all near 2^53.
 *
 * @module
 */

const MAX_SAFE = Number.MAX_SAFE_INTEGER

/** Splits a double into halves of 26 bits each (Veltkamp), for exact products. */
const SPLITTER = 2 ** 27 + 1

/**
 * Where the split product stays exact: the estimated quotient is off by at most
 * product·2^-51, so the remainder it leaves stays below 2^53 for a product below 2^100
 * and a divisor below 2^50 (every policy of sane size); beyond, BigInt.
 */
const DEKKER_PRODUCT = 2 ** 100
const DEKKER_DIVISOR = 2 ** 50

/**
 * Where {@link mulDivMod} leaves its answer: `[quotient, remainder]`. One per process;
 * read it before the next call (the kernels call nothing in between).
 */
export const PAIR = new Float64Array(2)

/**
 * `a·b + c − q·d`, exactly, for safe integers whose true value is small (a remainder):
 * each product is split into its rounded value and its rounding error (both exact),
 * and the large parts cancel exactly (Sterbenz) because they are close.
 */
function remainder(a: number, b: number, c: number, q: number, d: number): number {
  const p1 = a * b
  const p2 = q * d
  let t = a * SPLITTER
  const ah = t - (t - a)
  const al = a - ah
  t = b * SPLITTER
  const bh = t - (t - b)
  const bl = b - bh
  t = q * SPLITTER
  const qh = t - (t - q)
  const ql = q - qh
  t = d * SPLITTER
  const dh = t - (t - d)
  const dl = d - dh
  const e1 = ah * bh - p1 + ah * bl + al * bh + al * bl
  const e2 = qh * dh - p2 + qh * dl + ql * dh + ql * dl
  return p1 - p2 + (e1 - e2) + c
}

/**
 * `floor((a·b + c) / d)` into `PAIR[0]` and the remainder into `PAIR[1]`, exactly, for
 * safe integers `a, b, c ≥ 0` and `d ≥ 1` whose quotient is a safe integer.
 *
 * @example
 * ```ts
 * mulAddDivMod(3, 1000, 999, 1000) // PAIR: [3, 999]
 * ```
 */
export function mulAddDivMod(a: number, b: number, c: number, d: number): void {
  const product = a * b
  if (product <= MAX_SAFE && product + c <= MAX_SAFE) {
    // Exact: for a numerator below 2^53 the division rounds to no integer it does not reach.
    const q = Math.floor((product + c) / d)
    PAIR[0] = q
    PAIR[1] = product + c - q * d
    return
  }
  if (product >= DEKKER_PRODUCT || d > DEKKER_DIVISOR) {
    // Only absurd policies (limits or windows near 2^53 together) come here.
    const big = BigInt(a) * BigInt(b) + BigInt(c)
    const divisor = BigInt(d)
    PAIR[0] = Number(big / divisor)
    PAIR[1] = Number(big % divisor)
    return
  }
  // c = cq·d + cr first: the split product stays exact only for a small addend.
  const cq = Math.floor(c / d)
  const cr = c - cq * d
  let q = Math.floor((product + cr) / d)
  let r = remainder(a, b, cr, q, d)
  // The estimate is off by a unit or two at most: step it onto the exact quotient.
  while (r < 0) {
    q -= 1
    r += d
  }
  while (r >= d) {
    q += 1
    r -= d
  }
  PAIR[0] = q + cq
  PAIR[1] = r
}

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
  mulAddDivMod(a, b, 0, d)
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
  mulAddDivMod(a, b, c, d)
  return PAIR[0]!
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
  mulAddDivMod(a, b, 0, d)
  return PAIR[1]! > 0 ? PAIR[0]! + 1 : PAIR[0]!
}

/**
 * The greatest common divisor of two positive safe integers.
 *
 * @example
 * ```ts
 * gcd(10_000_000_000, 86_400_000_000) // 400_000_000
 * ```
 */
export function gcd(a: number, b: number): number {
  while (b !== 0) {
    const r = a % b
    a = b
    b = r
  }
  return a
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
