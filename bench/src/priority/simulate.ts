import { type ConcurrencyLimiter, ManualClock, type Permit } from '@sluice/core'
import { exponential, seededRandom } from '../adaptive/random'
import { percentile } from '../stats'
import { TimeHeap } from '../time-heap'

/**
 * A surge: a service of `workers` (C) serving one request each in `serviceMs` on average
 * (exponentially distributed), each class of traffic arriving at its `load` (a share of
 * the capacity), and one class at `surge.times` its load from `surge.startMs` for
 * `surge.ms`. Clients give up after `timeoutMs`: a waiting request leaves the queue then,
 * and an answer later than that is not goodput.
 */
export interface PriorityScenario {
  readonly workers: number
  readonly serviceMs: number
  readonly load: Readonly<Record<RequestClass, number>>
  readonly surge: {
    readonly kind: RequestClass
    readonly times: number
    readonly startMs: number
    readonly ms: number
  }
  readonly durationMs: number
  readonly timeoutMs: number
  /** Resolution of the timeline drawn in the chart. */
  readonly tickMs: number
  readonly seed: number
}

/** The two kinds of traffic. */
export type RequestClass = 'critical' | 'sheddable'

/** What a contender puts in front of the service. */
export interface Gate {
  readonly limiter: ConcurrencyLimiter
  /** Whether each request enters at its class as priority; otherwise all are alike. */
  readonly prioritized: boolean
  /** Whether a request refused at once may wait in `enter` (a queue, or priorities). */
  readonly waits: boolean
  /** Gives a permit back; `late` when the answer came after the client's timeout. */
  release(permit: Permit, late: boolean): void
}

/** One way of shedding, built afresh for each run on the run's clock. */
export interface PriorityContender {
  readonly id: string
  readonly label: string
  gate(clock: ManualClock, scenario: PriorityScenario): Gate
}

/** One class of traffic over the surge. */
export interface ClassResult {
  /** Requests that arrived during the surge. */
  readonly offered: number
  /** Of those, answered within the clients' timeout. */
  readonly inTime: number
  /** `inTime / offered`. */
  readonly availability: number
  /** `inTime` per second over what the service can answer per second. */
  readonly goodput: number
  /** Latency of the requests answered, waiting included. */
  readonly p50Ms: number
  readonly p99Ms: number
}

/** One contender's run. */
export interface PriorityRun {
  readonly contender: PriorityContender
  readonly critical: ClassResult
  readonly sheddable: ClassResult
  /** Both classes' goodput over the surge. */
  readonly goodput: number
  /**
   * Per tick: each class's answers within the timeout per second over the capacity, and
   * the p99 latency of critical requests answered (by completion time).
   */
  readonly timeline: {
    readonly critical: number[]
    readonly sheddable: number[]
    readonly criticalP99Ms: number[]
  }
}

interface Request {
  readonly kind: RequestClass
  readonly arrivedAt: number
  readonly serviceMs: number
  state: 'waiting' | 'running' | 'refused' | 'done'
  permit: Permit | undefined
  controller: AbortController | undefined
}

type Event = { readonly done: boolean; readonly request: Request }

/**
 * Requests per millisecond the service answers at full use.
 *
 * @example
 * ```ts
 * capacityPerMs(PRIORITY_SCENARIO) // 3.2: 32 workers at 10 ms
 * ```
 */
export function capacityPerMs(scenario: PriorityScenario): number {
  return scenario.workers / scenario.serviceMs
}

/** Poisson arrivals of one class, at a rate that may change at the surge's edges. */
class Arrivals {
  readonly #random: () => number
  readonly #rateAt: (t: number) => number
  readonly #edges: readonly number[]
  next: number

  constructor(random: () => number, rateAt: (t: number) => number, edges: readonly number[]) {
    this.#random = random
    this.#rateAt = rateAt
    this.#edges = edges
    this.next = this.#after(0)
  }

  advance(): void {
    this.next = this.#after(this.next)
  }

  // Memoryless: a gap that crosses an edge is drawn again from the edge at the new rate.
  #after(from: number): number {
    let t = from
    for (;;) {
      const rate = this.#rateAt(t)
      const edge = this.#edges.find((e) => e > t) ?? Number.POSITIVE_INFINITY
      const next = rate > 0 ? t + exponential(this.#random, 1 / rate) : Number.POSITIVE_INFINITY
      if (next < edge) return next
      if (edge === Number.POSITIVE_INFINITY) return edge
      t = edge
    }
  }
}

/** Lets every promise callback already due run; no simulated time passes. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Runs one contender through the scenario, event by event on the `ManualClock` its
 * limiter reads: arrivals, completions and client timeouts in time order, the clock set to
 * each event's time, and every permit the limiter grants (promise callbacks included)
 * handed to the service before time moves on. No real time passes; a seed gives the same
 * run on any machine, and every contender sees the same arrivals and service times.
 *
 * @example
 * ```ts
 * const run = await simulate(PRIORITY_SCENARIO, PRIORITY_CONTENDERS[0]!)
 * run.critical.availability // what critical traffic kept through the surge
 * ```
 */
export async function simulate(
  scenario: PriorityScenario,
  contender: PriorityContender,
): Promise<PriorityRun> {
  // Hundreds of thousands of refusals are RateLimitErrors nobody reads the stack of.
  const stackTraceLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return await run(scenario, contender)
  } finally {
    Error.stackTraceLimit = stackTraceLimit
  }
}

async function run(scenario: PriorityScenario, contender: PriorityContender): Promise<PriorityRun> {
  const clock = new ManualClock()
  const gate = contender.gate(clock, scenario)
  const { limiter } = gate
  const capacity = capacityPerMs(scenario)
  const { surge } = scenario
  const surgeEnd = surge.startMs + surge.ms
  const edges = [surge.startMs, surgeEnd, scenario.durationMs]
  const during = (t: number) => t >= surge.startMs && t < surgeEnd
  const rate = (kind: RequestClass) => (t: number) =>
    t >= scenario.durationMs
      ? 0
      : scenario.load[kind] * capacity * (kind === surge.kind && during(t) ? surge.times : 1)
  const critical = new Arrivals(seededRandom(scenario.seed), rate('critical'), edges)
  const sheddable = new Arrivals(seededRandom(scenario.seed ^ 0x2545f491), rate('sheddable'), edges)
  const services = seededRandom(scenario.seed ^ 0x5bd1e995)
  const events = new TimeHeap<Event>()
  const backlog: Request[] = []
  let backlogHead = 0
  let idleWorkers = scenario.workers
  /** Requests holding a permit in the simulation: the limiter's inFlight once all is handed over. */
  let holding = 0

  const ticks = Math.ceil(scenario.durationMs / scenario.tickMs)
  const perTick = {
    critical: new Array<number>(ticks).fill(0),
    sheddable: new Array<number>(ticks).fill(0),
  }
  const criticalByTick: number[][] = Array.from({ length: ticks }, () => [])
  const stats = {
    critical: { offered: 0, inTime: 0, latencies: [] as number[] },
    sheddable: { offered: 0, inTime: 0, latencies: [] as number[] },
  }

  const start = (request: Request, permit: Permit, now: number) => {
    request.state = 'running'
    request.permit = permit
    holding++
    if (idleWorkers > 0) {
      idleWorkers--
      events.push(now + request.serviceMs, { done: true, request })
    } else {
      backlog.push(request)
    }
  }

  const complete = (request: Request, now: number) => {
    const latency = now - request.arrivedAt
    const late = latency > scenario.timeoutMs
    request.state = 'done'
    holding--
    const tick = Math.min(ticks - 1, Math.floor(now / scenario.tickMs))
    if (!late) perTick[request.kind][tick]! += 1
    if (request.kind === 'critical') criticalByTick[tick]!.push(latency)
    if (during(request.arrivedAt)) {
      const s = stats[request.kind]
      s.latencies.push(latency)
      if (!late) s.inTime++
    }
    gate.release(request.permit as Permit, late)
    const next = backlog[backlogHead]
    if (next === undefined) {
      idleWorkers++
    } else {
      backlog[backlogHead++] = undefined as never
      events.push(now + next.serviceMs, { done: true, request: next })
    }
  }

  const arrive = (kind: RequestClass, now: number) => {
    const request: Request = {
      kind,
      arrivedAt: now,
      // Drawn for every arrival, admitted or not, so all contenders share one sequence.
      serviceMs: exponential(services, scenario.serviceMs),
      state: 'waiting',
      permit: undefined,
      controller: undefined,
    }
    if (during(now)) stats[kind].offered++
    const priority = gate.prioritized ? kind : undefined
    const permit = limiter.tryEnter(priority === undefined ? undefined : { priority })
    if (permit !== undefined) {
      start(request, permit, now)
      return
    }
    if (!gate.waits) {
      request.state = 'refused'
      return
    }
    const controller = new AbortController()
    request.controller = controller
    events.push(now + scenario.timeoutMs, { done: false, request })
    limiter
      .enter(
        priority === undefined
          ? { signal: controller.signal }
          : { priority, signal: controller.signal },
      )
      .then(
        (granted) => start(request, granted, clock.now()),
        () => {
          request.state = 'refused'
        },
      )
  }

  for (;;) {
    const nextEvent = events.peekTime()
    const now = Math.min(critical.next, sheddable.next, nextEvent)
    if (now === Number.POSITIVE_INFINITY) break
    clock.set(now)
    if (nextEvent === now) {
      const { done, request } = events.pop()
      if (done) complete(request, now)
      else if (request.state === 'waiting') request.controller?.abort()
    } else if (critical.next === now) {
      critical.advance()
      arrive('critical', now)
    } else {
      sheddable.advance()
      arrive('sheddable', now)
    }
    // Permits granted to waiters reach them through promise callbacks: hand each one to
    // the service at this instant, before the clock moves.
    while (limiter.inFlight > holding) await settle()
  }
  await settle()

  const surgeSeconds = surge.ms / 1000
  const perSecond = capacity * 1000
  const result = (kind: RequestClass): ClassResult => {
    const s = stats[kind]
    return {
      offered: s.offered,
      inTime: s.inTime,
      availability: s.offered === 0 ? 1 : s.inTime / s.offered,
      goodput: s.inTime / surgeSeconds / perSecond,
      p50Ms: percentile(s.latencies, 50),
      p99Ms: percentile(s.latencies, 99),
    }
  }
  const tickSeconds = scenario.tickMs / 1000
  const share = (n: number) => n / tickSeconds / perSecond
  const criticalResult = result('critical')
  const sheddableResult = result('sheddable')
  return {
    contender,
    critical: criticalResult,
    sheddable: sheddableResult,
    goodput: criticalResult.goodput + sheddableResult.goodput,
    timeline: {
      critical: perTick.critical.map(share),
      sheddable: perTick.sheddable.map(share),
      criticalP99Ms: criticalByTick.map((values) => percentile(values, 99)),
    },
  }
}
