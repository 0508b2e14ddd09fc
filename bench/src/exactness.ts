import FakeTimers from '@sinonjs/fake-timers'
import { ManualClock } from '@sluice/core'
import { EXACT_RATE } from './config'
import { CONTENDERS, type Contender, decide, type Instance } from './contenders'

/** A sequence of request times, in ms from the start of the run. */
export interface ExactnessScenario {
  readonly name: string
  readonly title: string
  readonly times: readonly number[]
}

const REQUESTS = 250

/**
 * Two ways of sending 250 requests at a limiter of "100 per second":
 * - `even`: one every 10 ms for 2.5 s, exactly the limit's pace, straddling two window
 *   boundaries (at 1 s and 2 s);
 * - `boundary`: one request at 0 (which starts the per-client windows of the peers that
 *   open a window on a client's first request), then 249 packed evenly into 750–1250 ms,
 *   straddling the boundary at 1 s, where a fixed window lets a second full quota in.
 */
export const EXACTNESS_SCENARIOS: readonly ExactnessScenario[] = [
  {
    name: 'even',
    title: '250 requests, one every 10 ms from 0 to 2.49 s',
    times: Array.from({ length: REQUESTS }, (_, i) => i * 10),
  },
  {
    name: 'boundary',
    title: '1 request at 0 ms, then 249 evenly over 750–1250 ms',
    times: [0, ...Array.from({ length: REQUESTS - 1 }, (_, i) => 750 + (i * 500) / (REQUESTS - 1))],
  },
]

/**
 * The most of `times` (sorted) inside any half-open span [t, t + spanMs): "at most 100
 * per second" means at most 100 in every such span.
 *
 * @example
 * ```ts
 * maxInSpan([0, 10, 990, 1000], 1000) // 3 (0, 10 and 990; 1000 starts the next span)
 * ```
 */
export function maxInSpan(times: readonly number[], spanMs: number): number {
  let best = 0
  let first = 0
  for (let last = 0; last < times.length; last++) {
    while (times[last]! - times[first]! >= spanMs) first++
    best = Math.max(best, last - first + 1)
  }
  return best
}

/** What one limiter admitted in one scenario. */
export interface ExactnessOutcome {
  readonly admitted: number
  /** The most admitted in any 1 s span. */
  readonly maxPerSecond: number
}

/** One limiter's outcomes, by scenario name. */
export interface ExactnessResult {
  readonly contender: Contender
  /** How time was simulated for it: an injected `ManualClock`, or fake global timers. */
  readonly clock: 'ManualClock' | 'fake timers'
  readonly outcomes: Readonly<Record<string, ExactnessOutcome>>
}

/** Whether a contender is simulated with an injected clock (sluice) or fake timers. */
function usesManualClock(c: Contender): boolean {
  return c.side === 'sluice'
}

/**
 * The limiters the exactness section runs: the inline GCRA floor, each time-based sluice
 * algorithm (its limiter itself; the memory store holds the same limiters) and every peer.
 */
export function exactnessContenders(): Contender[] {
  return CONTENDERS.filter(
    (c) =>
      c.id === 'floor/gcra-map' ||
      (c.side === 'sluice' &&
        c.shapes.includes('hot') &&
        !c.id.includes('@') &&
        c.algorithm !== 'concurrency') ||
      c.side === 'peer',
  )
}

/**
 * Sends one scenario's requests, each at its simulated time, from one client, and
 * returns the times of those admitted. Sluice limiters get a `ManualClock`. Peers read
 * `Date.now()`, `performance.now()` or `process.hrtime()` and arm timers to expire
 * state, none of which can be injected, so they run under @sinonjs/fake-timers with all
 * of those faked: time only moves when `tick` moves it, and timers that fall due on the
 * way fire in order, as they would have in real time.
 */
export async function admittedTimes(c: Contender, times: readonly number[]): Promise<number[]> {
  const admitted: number[] = []
  if (usesManualClock(c)) {
    const clock = new ManualClock(0)
    const instance = c.create(EXACT_RATE, { keys: 1, clock })
    for (const t of times) {
      clock.set(t)
      if (await decide(instance, 'client')) admitted.push(t)
    }
    return admitted
  }
  // A whole second, so windows a peer aligns to the epoch start on a boundary, as
  // sluice's do at the ManualClock's zero.
  const fake = FakeTimers.withGlobal(globalThis).install({
    now: 1_700_000_000_000,
    toFake: [
      'Date',
      'performance',
      'hrtime',
      'setTimeout',
      'clearTimeout',
      'setInterval',
      'clearInterval',
    ],
  })
  try {
    const instance: Instance = c.create(EXACT_RATE, { keys: 1 })
    let now = 0
    for (const t of times) {
      fake.tick(t - now)
      now = t
      if (await decide(instance, 'client')) admitted.push(t)
    }
  } finally {
    fake.uninstall()
  }
  return admitted
}

/**
 * Runs every scenario against every limiter given.
 *
 * @example
 * ```ts
 * const [floor] = await runExactness([contender('floor/gcra-map')])
 * floor.outcomes.boundary.maxPerSecond // 150
 * ```
 */
export async function runExactness(
  contenders: readonly Contender[] = exactnessContenders(),
): Promise<ExactnessResult[]> {
  const results: ExactnessResult[] = []
  for (const c of contenders) {
    const outcomes: Record<string, ExactnessOutcome> = {}
    for (const scenario of EXACTNESS_SCENARIOS) {
      const times = await admittedTimes(c, scenario.times)
      outcomes[scenario.name] = { admitted: times.length, maxPerSecond: maxInSpan(times, 1000) }
    }
    results.push({
      contender: c,
      clock: usesManualClock(c) ? 'ManualClock' : 'fake timers',
      outcomes,
    })
  }
  return results
}
