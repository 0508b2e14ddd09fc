import { ADAPTIVE_CONTENDERS, ALGORITHM_IDS } from './contenders'
import { type Contender, type RunResult, type Scenario, simulate } from './simulate'

/**
 * Issue 16's scenario: 32 workers at 10 ms (3,200 requests per second), offered three
 * times that for 60 simulated seconds; clients give up after 1 s.
 */
export const ADAPTIVE_SCENARIO: Scenario = {
  workers: 32,
  serviceMs: 10,
  load: 3,
  durationMs: 60_000,
  timeoutMs: 1000,
  tickMs: 250,
  seed: 16,
}

/** The targets: goodput at least 0.9 of capacity, admitted p99 at most 2× the no-load p99. */
export const ADAPTIVE_TARGETS = { goodput: 0.9, p99Ratio: 2 } as const

/** Downstream sizes and seeds of the robustness table: the defaults must hold without tuning. */
export const ROBUSTNESS = { workers: [4, 8, 32, 128], seeds: [16, 17, 18] } as const

/** One contender's figures against the no-load p99 of its scenario. */
export interface Scored {
  readonly run: RunResult
  readonly p99Ratio: number
  readonly met: boolean
}

/** One row of the robustness table: the worst goodput and p99 ratio over the seeds. */
export interface RobustnessCell {
  readonly workers: number
  readonly contender: Contender
  readonly goodput: number
  readonly p99Ratio: number
  readonly met: boolean
}

/** Everything section 5 of RESULTS.md and the chart are drawn from. */
export interface AdaptiveResults {
  readonly scenario: Scenario
  readonly noLoadP99Ms: number
  readonly scored: readonly Scored[]
  readonly robustness: readonly RobustnessCell[]
}

const noLimit = ADAPTIVE_CONTENDERS.find((c) => c.id === 'none') as Contender

/**
 * The p99 latency with no limit at a tenth of capacity: what the downstream does unloaded.
 *
 * @example
 * ```ts
 * noLoadP99(ADAPTIVE_SCENARIO) // 45.8 ms for exponential 10 ms service
 * ```
 */
export function noLoadP99(scenario: Scenario): number {
  return simulate({ ...scenario, load: 0.1 }, noLimit).p99Ms
}

/**
 * Whether a run meets both of the targets.
 *
 * @example
 * ```ts
 * meetsTargets(0.995, 1.12) // true
 * meetsTargets(1.0, 3.0)    // false: too much queueing
 * ```
 */
export function meetsTargets(goodput: number, p99Ratio: number): boolean {
  return goodput >= ADAPTIVE_TARGETS.goodput && p99Ratio <= ADAPTIVE_TARGETS.p99Ratio
}

/**
 * Runs every contender through `scenario`, scored against its no-load p99.
 *
 * @example
 * ```ts
 * const { scored } = runScenario({ ...ADAPTIVE_SCENARIO, workers: 8, durationMs: 10_000 })
 * scored.filter((s) => s.met).map((s) => s.run.contender.id) // fixed-right, gradient2, vegas, aimd
 * ```
 */
export function runScenario(
  scenario: Scenario,
  contenders: readonly Contender[] = ADAPTIVE_CONTENDERS,
): { noLoadP99Ms: number; scored: Scored[] } {
  const noLoadP99Ms = noLoadP99(scenario)
  const scored = contenders.map((contender) => {
    const run = simulate(scenario, contender)
    const p99Ratio = run.p99Ms / noLoadP99Ms
    return { run, p99Ratio, met: meetsTargets(run.goodput, p99Ratio) }
  })
  return { noLoadP99Ms, scored }
}

/**
 * The whole section: the scenario with every contender, then the fixed limit
 * that is right for each downstream and the three algorithms at their defaults on
 * downstreams of 4 to 128 workers, worst of three seeds. Simulated: the figures are the
 * same on every machine.
 *
 * @example
 * ```ts
 * const results = runAdaptive(console.error)
 * console.log(renderAdaptiveSection(results))
 * ```
 */
export function runAdaptive(log: (line: string) => void = () => {}): AdaptiveResults {
  const scenario = ADAPTIVE_SCENARIO
  log(`  ${scenario.workers} workers, ${scenario.load}× overload, ${scenario.durationMs / 1000} s`)
  const { noLoadP99Ms, scored } = runScenario(scenario)
  const picked = ADAPTIVE_CONTENDERS.filter(
    (c) => c.id === 'fixed-right' || (ALGORITHM_IDS as readonly string[]).includes(c.id),
  )
  const robustness: RobustnessCell[] = []
  for (const workers of ROBUSTNESS.workers) {
    log(`  robustness: ${workers} workers`)
    const runs = ROBUSTNESS.seeds.map((seed) => runScenario({ ...scenario, workers, seed }, picked))
    picked.forEach((contender, i) => {
      const goodput = Math.min(...runs.map((r) => r.scored[i]?.run.goodput ?? Number.NaN))
      const p99Ratio = Math.max(...runs.map((r) => r.scored[i]?.p99Ratio ?? Number.NaN))
      robustness.push({
        workers,
        contender,
        goodput,
        p99Ratio,
        met: meetsTargets(goodput, p99Ratio),
      })
    })
  }
  return { scenario, noLoadP99Ms, scored, robustness }
}
