import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { renderSvg, renderText } from './render'
import { LIMIT, type Series, simulate, TICKS } from './simulate'

const runs = simulate()
const byName = (name: string): Series => {
  const found = runs.find((s) => s.algorithm === name)
  if (!found) throw new Error(`no series ${name}`)
  return found
}
/** Most admitted in any 10 consecutive ticks (one rolling second). */
const maxPerSecond = (values: readonly number[]) => {
  let best = 0
  for (let start = 0; start + 10 <= values.length; start++) {
    best = Math.max(
      best,
      values.slice(start, start + 10).reduce((a, b) => a + b, 0),
    )
  }
  return best
}

describe('demo traffic through the six limiters', () => {
  it('never admits more than was offered', () => {
    for (const s of runs.filter((r) => r.measure === 'admitted')) {
      s.admitted.forEach((n, tick) => {
        expect(n).toBeLessThanOrEqual(s.offered[tick] ?? 0)
      })
    }
  })

  it('token bucket: spends the idle second as a burst, then one per tick', () => {
    const { admitted } = byName('token bucket')
    expect(admitted.slice(10, 20)).toEqual([3, 3, 3, 3, 2, 1, 1, 1, 1, 1])
    expect(admitted[39]).toBe(10)
    expect(admitted.slice(41)).toEqual(Array(TICKS - 41).fill(1))
  })

  it('leaky bucket: a flat top of one per tick, even after idling', () => {
    const { admitted } = byName('leaky bucket')
    expect(Math.max(...admitted)).toBe(1)
    expect(admitted[39]).toBe(1)
  })

  it('sliding window: at most the limit in any rolling second', () => {
    expect(maxPerSecond(byName('sliding window').admitted)).toBe(LIMIT)
  })

  it('fixed window: the documented double burst across the 4 s boundary', () => {
    const { admitted } = byName('fixed window')
    expect(admitted[39]).toBe(LIMIT)
    expect(admitted[40]).toBe(LIMIT)
    expect(maxPerSecond(admitted)).toBe(2 * LIMIT)
  })

  it('warm-up: admits less while young than once warm', () => {
    const { admitted } = byName('warm-up')
    const young = admitted.slice(11, 21).reduce((a, b) => a + b, 0)
    const warm = admitted.slice(50, 60).reduce((a, b) => a + b, 0)
    expect(young).toBeLessThan(warm)
    expect(warm).toBe(LIMIT)
  })

  it('bulkhead: plateaus at 4 in flight', () => {
    const { admitted } = byName('bulkhead')
    expect(Math.max(...admitted)).toBe(4)
    expect(admitted.filter((n) => n === 4).length).toBeGreaterThan(30)
  })
})

describe('charts', () => {
  it('the text chart has one block per limiter and a time axis', () => {
    const text = renderText(runs, false)
    for (const s of runs) expect(text).toContain(s.algorithm)
    expect(text).toContain('5s')
    expect(text).not.toContain('\x1b[')
  })

  it('docs/algorithms.svg is what the demo draws today (run `pnpm --filter @sluice/demo charts`)', () => {
    const committed = readFileSync(new URL('../../../docs/algorithms.svg', import.meta.url), 'utf8')
    expect(committed).toBe(renderSvg(runs))
  })
})
