import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { renderPrioritySvg } from '../src/priority/chart'
import {
  CALM_REFERENCE,
  CHART_IDS,
  PRIORITY_CONTENDERS,
  REVERSE_CONTENDERS,
} from '../src/priority/contenders'
import {
  PRIORITY_SCENARIO,
  type PriorityScored,
  REVERSE_SCENARIO,
  scorePriority,
} from '../src/priority/run'
import { renderPrioritySection } from '../src/priority/section'
import { type PriorityScenario, simulate } from '../src/priority/simulate'

const contender = (id: string) => {
  const found = [...PRIORITY_CONTENDERS, ...REVERSE_CONTENDERS].find((c) => c.id === id)
  if (found === undefined) throw new Error(id)
  return found
}

// The service, a 4 s surge: short enough for a test, long enough for every outcome to show.
const short: PriorityScenario = {
  ...PRIORITY_SCENARIO,
  surge: { ...PRIORITY_SCENARIO.surge, startMs: 2_000, ms: 4_000 },
  durationMs: 8_000,
}

describe('the priority surge simulation', async () => {
  const ids = ['none', 'none-queue', 'priority', 'codel', 'adaptive-lifo']
  const scored = await scorePriority(short, ids.map(contender))
  const outcome = (id: string) => scored.find((s) => s.run.contender.id === id) as PriorityScored

  it('is repeatable: the same seed gives the same figures', async () => {
    const again = await simulate(short, contender('codel'))
    expect([again.critical, again.sheddable]).toEqual([
      outcome('codel').run.critical,
      outcome('codel').run.sheddable,
    ])
  })

  it('without priorities critical traffic loses what sheddable traffic takes', () => {
    expect(outcome('none').run.critical.availability).toBeLessThan(0.5)
    // A queue makes it wait behind the surge too.
    expect(outcome('none-queue').run.critical.availability).toBeLessThan(0.5)
    expect(outcome('none-queue').p99Ratio).toBeGreaterThan(3)
  })

  it.each(['priority', 'codel', 'adaptive-lifo'])('with %s critical traffic rides it out', (id) => {
    const { run, p99Ratio } = outcome(id)
    expect(run.critical.availability).toBeGreaterThanOrEqual(0.999)
    expect(p99Ratio).toBeLessThanOrEqual(1.2)
    expect(run.goodput).toBeGreaterThanOrEqual(0.95)
  })

  it('a shedding queue keeps sheddable waits short where FIFO lets them grow', async () => {
    const fifo = await simulate(short, contender('fifo'))
    expect(fifo.sheddable.p99Ms).toBeGreaterThan(2 * outcome('codel').run.sheddable.p99Ms)
  })

  it('in a critical surge a share for sheddable traffic keeps it alive', async () => {
    const reverse = {
      ...short,
      surge: { ...short.surge, kind: REVERSE_SCENARIO.surge.kind, times: 6 },
    }
    const only = await simulate(reverse, contender('priority'))
    const shared = await simulate(reverse, contender('both-shares'))
    expect(shared.sheddable.goodput).toBeGreaterThan(2 * only.sheddable.goodput)
  })

  it('the section has a row and a verdict for every contender', () => {
    const section = renderPrioritySection({
      scenario: short,
      scored,
      reverse: { scenario: REVERSE_SCENARIO, runs: scored.map((s) => s.run) },
    })
    for (const { run } of scored) expect(section).toContain(`| ${run.contender.label} |`)
    expect(section.match(/\*\*met\*\*/g)).toHaveLength(3)
  })
})

describe('docs/priority-load-shedding.svg', () => {
  it('is what the simulation draws today (run `pnpm --filter @sluice/bench bench:priority`)', {
    timeout: 120_000,
  }, async () => {
    const runs = []
    for (const id of CHART_IDS) runs.push(await simulate(PRIORITY_SCENARIO, contender(id)))
    const calm = await simulate(
      { ...PRIORITY_SCENARIO, surge: { ...PRIORITY_SCENARIO.surge, times: 1 } },
      contender(CALM_REFERENCE),
    )
    const committed = readFileSync(
      new URL('../../docs/priority-load-shedding.svg', import.meta.url),
      'utf8',
    )
    expect(committed).toBe(
      renderPrioritySvg({ scenario: PRIORITY_SCENARIO, runs, calmP99Ms: calm.critical.p99Ms }),
    )
  })
})
