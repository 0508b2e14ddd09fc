import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { mulAddDiv, mulDivCeil, mulDivMod, PAIR } from './exact'

const safe = fc.oneof(
  fc.integer({ min: 0, max: 1000 }),
  fc.integer({ min: 0, max: 2 ** 32 }),
  fc.maxSafeInteger().map((n) => Math.abs(n)),
  fc.constantFrom(1e9, 1e10, 86_400_000_000, 3_600_000_000, 2 ** 53 - 1, 2 ** 50, 2 ** 51 + 1),
)
const divisor = safe.map((n) => Math.max(1, n))

describe('exact products beyond 2^53', () => {
  it('mulDivMod is exact against BigInt wherever the quotient is safe', () => {
    fc.assert(
      fc.property(safe, safe, divisor, (a, b, d) => {
        const product = BigInt(a) * BigInt(b)
        const q = product / BigInt(d)
        fc.pre(q <= BigInt(Number.MAX_SAFE_INTEGER))
        mulDivMod(a, b, d)
        expect([PAIR[0], PAIR[1]]).toEqual([Number(q), Number(product % BigInt(d))])
      }),
      { numRuns: 20_000 },
    )
  })

  it('mulAddDiv and mulDivCeil are exact against BigInt', () => {
    fc.assert(
      fc.property(safe, safe, safe, divisor, (a, b, c, d) => {
        const sum = BigInt(a) * BigInt(b) + BigInt(c)
        fc.pre(sum / BigInt(d) <= BigInt(Number.MAX_SAFE_INTEGER))
        expect(mulAddDiv(a, b, c, d)).toBe(Number(sum / BigInt(d)))
        const product = BigInt(a) * BigInt(b)
        const ceil = (product + BigInt(d) - 1n) / BigInt(d)
        fc.pre(ceil <= BigInt(Number.MAX_SAFE_INTEGER))
        expect(mulDivCeil(a, b, d)).toBe(Number(ceil))
      }),
      { numRuns: 20_000 },
    )
  })

  it('a large addend stays exact (found by the reconfiguration work)', () => {
    expect(mulAddDiv(7_710_582_987_972_563, 1, 9_007_199_254_740_991, 5)).toBe(
      Number((7_710_582_987_972_563n + 9_007_199_254_740_991n) / 5n),
    )
  })

  it('10^10 a day: one permit is 8.64 µs, the bucket 8.64·10^20 ticks', () => {
    mulDivMod(1, 86_400_000_000, 10_000_000_000)
    expect([PAIR[0], PAIR[1]]).toEqual([8, 6_400_000_000])
    mulDivMod(10_000_000_000, 86_400_000_000, 10_000_000_000)
    expect([PAIR[0], PAIR[1]]).toEqual([86_400_000_000, 0])
    mulDivMod(9_999_999_999, 86_400_000_000, 10_000_000_000)
    expect([PAIR[0], PAIR[1]]).toEqual([86_399_999_991, 3_600_000_000])
  })
})
