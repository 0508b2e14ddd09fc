import { PRIORITY_CONTENDERS, REVERSE_CONTENDERS } from './contenders'
import {
  type PriorityContender,
  type PriorityRun,
  type PriorityScenario,
  simulate,
} from './simulate'

/**
 * Issue 29's scenario: C = 32 workers at 10 ms (3,200 requests per second), critical
 * traffic at half of that throughout, sheddable at a quarter, then twelve times that
 * (3 C) for 30 s: 3.5 times the capacity offered. Clients give up after 1 s.
 */
export const PRIORITY_SCENARIO: PriorityScenario = {
  workers: 32,
  serviceMs: 10,
  load: { critical: 0.5, sheddable: 0.25 },
  surge: { kind: 'sheddable', times: 12, startMs: 10_000, ms: 30_000 },
  durationMs: 50_000,
  timeoutMs: 1000,
  tickMs: 250,
  seed: 29,
}

/**
 * The other way round: critical traffic surges to six times its load (3 C) while
 * sheddable traffic stays at a quarter. Priorities alone let critical take everything; a
 * partition keeps a share for the rest.
 */
export const REVERSE_SCENARIO: PriorityScenario = {
  ...PRIORITY_SCENARIO,
  surge: { ...PRIORITY_SCENARIO.surge, kind: 'critical', times: 6 },
}

/**
 * The targets, during the surge: critical availability at least 99.9 %, critical
 * p99 at most 1.2× its p99 without the surge, and goodput at least 0.95 of capacity.
 */
export const PRIORITY_TARGETS = { availability: 0.999, p99Ratio: 1.2, goodput: 0.95 } as const

/** One contender with and without the surge, against the targets. */
export interface PriorityScored {
  readonly run: PriorityRun
  readonly calm: PriorityRun
  readonly p99Ratio: number
  readonly met: boolean
}

/** Everything the section and the chart are drawn from. */
export interface PriorityResults {
  readonly scenario: PriorityScenario
  readonly scored: readonly PriorityScored[]
  readonly reverse: { readonly scenario: PriorityScenario; readonly runs: readonly PriorityRun[] }
}

/**
 * Whether a run meets all three targets.
 *
 * @example
 * ```ts
 * meetsPriorityTargets(0.9995, 1.05, 0.99) // true
 * ```
 */
export function meetsPriorityTargets(availability: number, p99Ratio: number, goodput: number) {
  const t = PRIORITY_TARGETS
  return availability >= t.availability && p99Ratio <= t.p99Ratio && goodput >= t.goodput
}

/**
 * Runs every contender through `scenario` and through the same scenario without the
 * surge (its critical p99 is what the surge is compared with).
 *
 * @example
 * ```ts
 * const { scored } = await scorePriority(PRIORITY_SCENARIO, PRIORITY_CONTENDERS)
 * scored.filter((s) => s.met).map((s) => s.run.contender.id)
 * ```
 */
export async function scorePriority(
  scenario: PriorityScenario,
  contenders: readonly PriorityContender[],
  log: (line: string) => void = () => {},
): Promise<PriorityScored[]> {
  const scored: PriorityScored[] = []
  for (const contender of contenders) {
    log(`  ${contender.label}`)
    const run = await simulate(scenario, contender)
    const calm = await simulate({ ...scenario, surge: { ...scenario.surge, times: 1 } }, contender)
    const p99Ratio = run.critical.p99Ms / calm.critical.p99Ms
    scored.push({
      run,
      calm,
      p99Ratio,
      met: meetsPriorityTargets(run.critical.availability, p99Ratio, run.goodput),
    })
  }
  return scored
}

/**
 * The whole section: the scenario with every contender (each also without the
 * surge), then the reverse surge. Simulated: the same on every machine.
 *
 * @example
 * ```ts
 * const results = await runPriority(console.error)
 * console.log(renderPrioritySection(results))
 * ```
 */
export async function runPriority(
  log: (line: string) => void = () => {},
): Promise<PriorityResults> {
  const scenario = PRIORITY_SCENARIO
  log(
    `  ${scenario.workers} workers, a ${scenario.surge.times}× ${scenario.surge.kind} surge for ${scenario.surge.ms / 1000} s`,
  )
  const scored = await scorePriority(scenario, PRIORITY_CONTENDERS, log)
  log(`  reverse: a ${REVERSE_SCENARIO.surge.times}× critical surge`)
  const runs: PriorityRun[] = []
  for (const contender of REVERSE_CONTENDERS) runs.push(await simulate(REVERSE_SCENARIO, contender))
  return { scenario, scored, reverse: { scenario: REVERSE_SCENARIO, runs } }
}
