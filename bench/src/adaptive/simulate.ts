import { ManualClock } from '@sluice/core'
import { percentile } from '../stats'
import { TimeHeap } from '../time-heap'
import { exponential, seededRandom } from './random'

/**
 * One simulated run: Poisson arrivals at `load ×` the downstream's capacity for
 * `durationMs`, a downstream of `workers` serving in FIFO order with exponentially
 * distributed service times (mean `serviceMs`), and clients that give up after
 * `timeoutMs` (a response later than that is not goodput, and is released as dropped).
 */
export interface Scenario {
  readonly workers: number
  readonly serviceMs: number
  readonly load: number
  readonly durationMs: number
  readonly timeoutMs: number
  /** Resolution of the timeline drawn in the chart. */
  readonly tickMs: number
  readonly seed: number
}

/** What a contender puts in front of the downstream: a concurrency limiter, or nothing. */
export interface Gate {
  tryEnter(): { release(outcome?: { dropped?: boolean }): void } | undefined
  readonly limit: number
}

/** A way of limiting the downstream, built afresh for each run on the run's clock. */
export interface Contender {
  readonly id: string
  readonly label: string
  /** `undefined`: no limit, every request goes through. */
  gate(clock: ManualClock, scenario: Scenario): Gate | undefined
}

/** One contender's run. */
export interface RunResult {
  readonly contender: Contender
  readonly offered: number
  readonly admitted: number
  /** Admitted requests answered within the client's timeout. */
  readonly inTime: number
  /** `inTime` per second over what the downstream can serve per second. */
  readonly goodput: number
  /** p99 latency of every admitted request, in ms. */
  readonly p99Ms: number
  /**
   * Per tick: the lowest limit in force during the tick (so a probe shows; `NaN` with no
   * limit) and the p99 latency of the requests completed in it.
   */
  readonly timeline: { readonly limit: number[]; readonly p99Ms: number[] }
}

interface Request {
  readonly arrivedAt: number
  readonly serviceMs: number
  readonly permit: { release(outcome?: { dropped?: boolean }): void } | undefined
}

/**
 * Requests per millisecond the downstream completes at full use.
 *
 * @example
 * ```ts
 * capacityPerMs(ADAPTIVE_SCENARIO) // 3.2: 32 workers at 10 ms
 * ```
 */
export function capacityPerMs(scenario: Scenario): number {
  return scenario.workers / scenario.serviceMs
}

/**
 * Runs one contender through the scenario, event by event on a `ManualClock` that the
 * contender's limiter reads: no real time passes, and the same seed gives the same run
 * (every contender sees the same arrival times and service times).
 *
 * @example
 * ```ts
 * const gradient2 = ADAPTIVE_CONTENDERS.find((c) => c.id === 'gradient2')!
 * simulate(ADAPTIVE_SCENARIO, gradient2).goodput // 0.995
 * ```
 */
export function simulate(scenario: Scenario, contender: Contender): RunResult {
  const clock = new ManualClock()
  const gate = contender.gate(clock, scenario)
  const arrivals = seededRandom(scenario.seed)
  const services = seededRandom(scenario.seed ^ 0x5bd1e995)
  const meanGapMs = 1 / (scenario.load * capacityPerMs(scenario))
  const completions = new TimeHeap<Request>()
  const waiting: Request[] = []
  let waitingHead = 0
  let idleWorkers = scenario.workers

  const latencies: number[] = []
  const completedTicks: number[] = []
  const ticks = Math.ceil(scenario.durationMs / scenario.tickMs)
  const limits: number[] = []
  let tickEnd = scenario.tickMs
  let lowest = gate?.limit ?? Number.NaN
  let offered = 0
  let inTime = 0

  let nextArrival = exponential(arrivals, meanGapMs)
  for (;;) {
    const arrival = nextArrival < scenario.durationMs
    const now = arrival ? Math.min(nextArrival, completions.peekTime()) : completions.peekTime()
    if (now === Number.POSITIVE_INFINITY) break
    while (now >= tickEnd && limits.length < ticks) {
      limits.push(lowest)
      lowest = gate?.limit ?? Number.NaN
      tickEnd += scenario.tickMs
    }
    clock.set(now)
    if (arrival && now === nextArrival) {
      offered++
      // Drawn for every arrival, admitted or not, so all contenders share one sequence.
      const serviceMs = exponential(services, scenario.serviceMs)
      nextArrival = now + exponential(arrivals, meanGapMs)
      const permit = gate?.tryEnter()
      if (gate !== undefined) lowest = Math.min(lowest, gate.limit)
      if (gate !== undefined && permit === undefined) continue
      const request: Request = { arrivedAt: now, serviceMs, permit }
      if (idleWorkers > 0) {
        idleWorkers--
        completions.push(now + serviceMs, request)
      } else {
        waiting.push(request)
      }
      continue
    }
    const done = completions.pop()
    const latency = now - done.arrivedAt
    latencies.push(latency)
    completedTicks.push(Math.floor(now / scenario.tickMs))
    if (latency <= scenario.timeoutMs) inTime++
    done.permit?.release({ dropped: latency > scenario.timeoutMs })
    if (gate !== undefined) lowest = Math.min(lowest, gate.limit)
    const next = waiting[waitingHead]
    if (next === undefined) {
      idleWorkers++
    } else {
      waiting[waitingHead++] = undefined as never
      completions.push(now + next.serviceMs, next)
    }
  }

  while (limits.length < ticks) {
    limits.push(lowest)
    lowest = gate?.limit ?? Number.NaN
  }
  return {
    contender,
    offered,
    admitted: latencies.length,
    inTime,
    goodput: inTime / (capacityPerMs(scenario) * scenario.durationMs),
    p99Ms: percentile(latencies, 99),
    timeline: { limit: limits, p99Ms: perTickP99(latencies, completedTicks, limits.length) },
  }
}

function perTickP99(latencies: number[], ticks: number[], count: number): number[] {
  const byTick: number[][] = Array.from({ length: count }, () => [])
  for (let i = 0; i < latencies.length; i++) byTick[ticks[i]!]?.push(latencies[i]!)
  return byTick.map((values) => percentile(values, 99))
}
