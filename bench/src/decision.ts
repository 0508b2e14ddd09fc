import { Child } from './child'
import { CONTENDER_FILTER, type DecisionScenario, type Shape } from './config'
import { CONTENDERS, type Contender } from './contenders'
import type { HeapLine } from './heap'
import type { ProfileSummary } from './profile'
import { pairedRatio, type Summary, summarize } from './stats'

/** The floor every "× floor" ratio is taken against. */
export const FLOOR_ID = 'floor/gcra-map'

/** One contender's numbers in one decision-cost scenario. */
export interface ContenderResult {
  readonly contender: Contender
  /** ns per decision, one median-of-batches sample per round. */
  readonly samples: readonly number[]
  readonly ns: Summary
  /** Round-by-round ratio to the floor's sample of the same round. */
  readonly vsFloor: Summary | undefined
  /** Retained heap (and off-heap) bytes per key after one decision per key. */
  readonly bytesPerKey: number | undefined
  /** Bytes one decision allocates (garbage or kept), measured after the warm-up. */
  readonly allocated: number | undefined
  /** Whether every check after a sample found the limit still unreached. */
  readonly alwaysAdmitted: boolean
  readonly error?: string
}

/** All contenders of one scenario. */
export interface ScenarioResult {
  readonly scenario: DecisionScenario
  readonly results: readonly ContenderResult[]
}

/**
 * The contenders that take part in a scenario of this shape (narrowed by
 * `BENCH_CONTENDERS`; the floor always takes part, every ratio is taken against it).
 */
export function contendersFor(shape: Shape): Contender[] {
  return CONTENDERS.filter(
    (c) =>
      c.shapes.includes(shape) &&
      (CONTENDER_FILTER === undefined || c.id === FLOOR_ID || CONTENDER_FILTER.test(c.id)),
  )
}

/** What a decision worker is asked to do. */
interface Job {
  readonly shape: Shape
  readonly keys: number
  readonly maxKeys?: number | undefined
  readonly heapSnapshot?: true
  readonly profileMs?: number
}

function job(id: string, j: Job): string {
  return JSON.stringify({ id, ...j })
}

function jobOf(scenario: DecisionScenario): Job {
  return { shape: scenario.shape, keys: scenario.keys, maxKeys: scenario.maxKeys }
}

/**
 * Runs one scenario: every contender in a child of its own, all started (and filled
 * with one decision per key) first, then sampled in rounds — each round takes one sample
 * of every contender, in an order that rotates from round to round — so that a noisy
 * stretch of the machine touches every contender alike, and ratios are taken per round.
 */
export async function runDecisionScenario(
  scenario: DecisionScenario,
  contenders: readonly Contender[],
  log: (line: string) => void,
): Promise<ScenarioResult> {
  const children: (Child | undefined)[] = []
  const errors = new Map<string, string>()
  const bytes = new Map<string, number>()
  const allocated = new Map<string, number>()
  try {
    for (const c of contenders) {
      try {
        const child = await Child.start(
          'decision-worker.ts',
          [job(c.id, jobOf(scenario))],
          'ready',
          {
            execArgv: ['--max-old-space-size=6144', ...(c.execArgv ?? [])],
            timeoutMs: 300_000,
          },
        )
        children.push(child)
        if (child.ready.bytesPerKey !== undefined) bytes.set(c.id, Number(child.ready.bytesPerKey))
        allocated.set(c.id, Number(child.ready.allocated))
        log(
          `  ${c.id}: ready (${scenario.keys} key(s) in ${Number(child.ready.prefillMs).toFixed(0)} ms)`,
        )
      } catch (error) {
        children.push(undefined)
        errors.set(c.id, String(error instanceof Error ? error.message : error))
        log(`  ${c.id}: FAILED ${errors.get(c.id)!.split('\n')[0]}`)
      }
    }
    const samples = contenders.map((): number[] => [])
    const admitted = contenders.map(() => true)
    for (let round = -1; round < scenario.rounds; round++) {
      const n = contenders.length
      const offset = ((round % n) + n) % n
      for (let k = 0; k < n; k++) {
        const i = (k + offset) % n
        const child = children[i]
        if (child === undefined || errors.has(contenders[i]!.id)) continue
        try {
          const reply = await child.request({ type: 'measure', ms: scenario.sampleMs }, 'sample')
          // Round -1 is a warm-up lap, taken in the same conditions and dropped.
          if (round >= 0) samples[i]!.push(Number(reply.ns))
          if (reply.admitted !== true) admitted[i] = false
        } catch (error) {
          errors.set(contenders[i]!.id, String(error instanceof Error ? error.message : error))
        }
      }
      if (round >= 0) log(`  round ${round + 1}/${scenario.rounds} done`)
    }
    const floorIndex = contenders.findIndex((c) => c.id === FLOOR_ID)
    const floorSamples = floorIndex === -1 ? undefined : samples[floorIndex]
    return {
      scenario,
      results: contenders.map((c, i) => {
        const error = errors.get(c.id)
        return {
          contender: c,
          samples: samples[i]!,
          ns: summarize(samples[i]!),
          vsFloor:
            floorSamples === undefined || floorSamples.length === 0
              ? undefined
              : pairedRatio(samples[i]!, floorSamples),
          bytesPerKey: bytes.get(c.id),
          allocated: allocated.get(c.id),
          alwaysAdmitted: admitted[i]!,
          ...(error === undefined ? {} : { error }),
        }
      }),
    }
  } finally {
    await Promise.all(children.map((child) => child?.close()))
  }
}

/**
 * A CPU profile of one contender's timed loop, in a fresh child with the scenario's keys:
 * the evidence for what bounds its cost.
 */
export async function profileContender(
  id: string,
  scenario: DecisionScenario,
  ms: number,
): Promise<ProfileSummary> {
  // V8's profiler charges an inlined function to the function it was inlined into, which
  // would hide every limiter method inside the benchmark loop: profile without inlining.
  // Each call then costs a little more, but the split between functions is what is read.
  const child = await Child.start(
    'decision-worker.ts',
    [job(id, { ...jobOf(scenario), profileMs: ms })],
    'ready',
    {
      execArgv: ['--no-turbo-inlining', ...(CONTENDERS.find((c) => c.id === id)?.execArgv ?? [])],
      timeoutMs: 300_000,
    },
  )
  await child.close()
  return child.ready.profile as ProfileSummary
}

/**
 * Retained bytes per key of one contender, broken down by kind of heap object (two heap
 * snapshots around filling `keys` keys): the evidence for where its memory goes.
 */
export async function heapOf(id: string, keys: number): Promise<readonly HeapLine[]> {
  const child = await Child.start(
    'decision-worker.ts',
    [job(id, { shape: 'keyed', keys, heapSnapshot: true })],
    'ready',
    { timeoutMs: 300_000 },
  )
  await child.close()
  return child.ready.breakdown as HeapLine[]
}
