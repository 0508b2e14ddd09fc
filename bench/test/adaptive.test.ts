import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { renderAdaptiveSvg } from '../src/adaptive/chart'
import { ADAPTIVE_CONTENDERS, ALGORITHM_IDS } from '../src/adaptive/contenders'
import { exponential, seededRandom } from '../src/adaptive/random'
import { ADAPTIVE_SCENARIO, runScenario } from '../src/adaptive/run'
import { renderAdaptiveSection } from '../src/adaptive/section'

describe('seeded random numbers', () => {
  it('repeat for a seed and differ between seeds', () => {
    const draw = (seed: number) => Array.from({ length: 5 }, seededRandom(seed))
    expect(draw(7)).toEqual(draw(7))
    expect(draw(7)).not.toEqual(draw(8))
    expect(draw(7).every((n) => n >= 0 && n < 1)).toBe(true)
  })

  it('give exponential service times with the asked mean', () => {
    const random = seededRandom(1)
    let sum = 0
    for (let i = 0; i < 100_000; i++) sum += exponential(random, 10)
    expect(sum / 100_000).toBeCloseTo(10, 1)
  })
})

describe('the overload simulation', () => {
  // 8 workers for 10 s: short enough for a test, long enough for every outcome to show.
  const short = { ...ADAPTIVE_SCENARIO, workers: 8, durationMs: 10_000 }
  const { scored } = runScenario(short)
  const outcome = (id: string) => {
    const found = scored.find((s) => s.run.contender.id === id)
    if (found === undefined) throw new Error(id)
    return { goodput: found.run.goodput, p99Ratio: found.p99Ratio, met: found.met }
  }

  it('is repeatable: the same seed gives the same figures', () => {
    const again = runScenario(short)
    expect(again.scored.map((s) => [s.run.goodput, s.run.p99Ms])).toEqual(
      scored.map((s) => [s.run.goodput, s.run.p99Ms]),
    )
  })

  it('without a limit the queue grows until almost every answer comes too late', () => {
    expect(outcome('none').goodput).toBeLessThan(0.2)
    expect(outcome('none').p99Ratio).toBeGreaterThan(100)
  })

  it('a fixed limit works only when it is right', () => {
    expect(outcome('fixed-low').goodput).toBeLessThan(0.6)
    expect(outcome('fixed-right').met).toBe(true)
    expect(outcome('fixed-high').goodput).toBeGreaterThan(0.9)
    expect(outcome('fixed-high').p99Ratio).toBeGreaterThan(2.5)
  })

  it.each(ALGORITHM_IDS)('%s at its defaults meets both targets', (id) => {
    expect(outcome(id)).toMatchObject({ met: true })
  })

  it('AIMD blind to latency grows past the right limit until latency misses the target', () => {
    expect(outcome('aimd-drops-only').p99Ratio).toBeGreaterThan(2)
  })

  it('the section has a row and a verdict for every contender', () => {
    const section = renderAdaptiveSection({
      ...runScenario(short),
      scenario: short,
      robustness: [],
    })
    for (const contender of ADAPTIVE_CONTENDERS) expect(section).toContain(`| ${contender.label} |`)
    expect(section.match(/\*\*met\*\*/g)).toHaveLength(4)
  })
})

describe('docs/adaptive-concurrency.svg', () => {
  it('is what the simulation draws today (run `pnpm --filter @sluice/bench bench:adaptive`)', () => {
    const algorithms = ADAPTIVE_CONTENDERS.filter((c) =>
      (ALGORITHM_IDS as readonly string[]).includes(c.id),
    )
    const run = { ...runScenario(ADAPTIVE_SCENARIO, algorithms), scenario: ADAPTIVE_SCENARIO }
    const committed = readFileSync(
      new URL('../../docs/adaptive-concurrency.svg', import.meta.url),
      'utf8',
    )
    expect(committed).toBe(renderAdaptiveSvg(run, ALGORITHM_IDS))
  })
})
