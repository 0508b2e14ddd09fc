import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { LUA_DIR } from '../scripts/lua'
import { connect, describeRedis } from './helpers'

// lib/exact.lua against BigInt, on Redis's own Lua: the properties @sluice/core's
// exact.test.ts checks for exact.ts, over the same kinds of numbers (small, 32-bit, any
// safe integer, the awkward ones of real policies), and the cases found on the way.

const lib = (name: string) => readFileSync(`${LUA_DIR}lib/${name}.lua`, 'utf8')

// Every tuple is a, b, c, d; the script answers floor((a·b + c) / d), its remainder and
// ceil(a·b / d), as text (a reply's integers are not read back whole past 2^53).
const SCRIPT = `${lib('clock')}${lib('exact')}
local out = {}
for i = 2, #ARGV, 4 do
  local a, b, c, d = ARGV[i] + 0, ARGV[i + 1] + 0, ARGV[i + 2] + 0, ARGV[i + 3] + 0
  local q, r = mulAddDivMod(a, b, c, d)
  out[#out + 1] = string.format('%d %d %d', q, r, mulDivCeil(a, b, d))
end
return out`

const MAX = Number.MAX_SAFE_INTEGER
const AWKWARD = [1e9, 1e10, 86_400_000_000, 3_600_000_000, MAX, 2 ** 50, 2 ** 51 + 1]

/** A seeded generator (mulberry32), so a failure replays. */
function numbers(seed: number) {
  let s = seed >>> 0
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
  return () => {
    const kind = next()
    if (kind < 0.25) return Math.floor(next() * 1001)
    if (kind < 0.5) return Math.floor(next() * 2 ** 32)
    if (kind < 0.75) return Math.floor(next() * 2 ** 21) * 2 ** 32 + Math.floor(next() * 2 ** 32)
    return AWKWARD[Math.floor(next() * AWKWARD.length)]!
  }
}

describeRedis('lib/exact.lua', () => {
  it('is exact against BigInt wherever the quotient is safe, large addends included', async () => {
    const next = numbers(22)
    const tuples: [number, number, number, number][] = [
      // Found by the reconfiguration work: the split product is exact only for a small addend.
      [7_710_582_987_972_563, 1, MAX, 5],
      [10_000_000_000, 86_400_000_000, 0, 10_000_000_000],
      [9_999_999_999, 86_400_000_000, 0, 10_000_000_000],
    ]
    while (tuples.length < 5_000) {
      const [a, b, c] = [next(), next(), next()]
      const d = Math.max(1, next())
      const sum = BigInt(a) * BigInt(b) + BigInt(c)
      const product = BigInt(a) * BigInt(b)
      const ceil = (product + BigInt(d) - 1n) / BigInt(d)
      if (sum / BigInt(d) <= BigInt(MAX) && ceil <= BigInt(MAX)) tuples.push([a, b, c, d])
    }
    const redis = connect()
    const answers = (await redis.eval(SCRIPT, 0, '', ...tuples.flat().map(String))) as string[]
    const want = tuples.map(([a, b, c, d]) => {
      const sum = BigInt(a) * BigInt(b) + BigInt(c)
      const product = BigInt(a) * BigInt(b)
      return `${sum / BigInt(d)} ${sum % BigInt(d)} ${(product + BigInt(d) - 1n) / BigInt(d)}`
    })
    const wrong = tuples.filter((_, i) => answers[i] !== want[i])
    expect(wrong).toEqual([])
  })
})
