import { QUEUE } from './contenders'
import { PRIORITY_TARGETS, type PriorityResults } from './run'
import { capacityPerMs } from './simulate'

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

const percent = (share: number) => `${(100 * share).toFixed(3)} %`
const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : 'n/a')

/**
 * The "Priority load shedding (issue 29)" section of RESULTS.md, body only (the caller
 * writes the heading): scenario, main table, the reverse surge, method.
 *
 * @example
 * ```ts
 * out.push('## 6. Priority load shedding (issue 29)', '', renderPrioritySection(results))
 * ```
 */
export function renderPrioritySection(results: PriorityResults): string {
  const { scenario, scored, reverse } = results
  const perSecond = capacityPerMs(scenario) * 1000
  const { load, surge } = scenario
  const t = PRIORITY_TARGETS
  const out: string[] = []
  out.push(
    `A service of C = ${scenario.workers} workers, ${scenario.serviceMs} ms per request (exponentially distributed): ${perSecond.toLocaleString('en-US')} requests per second at most. Critical traffic arrives at ${load.critical} C throughout, sheddable traffic at ${load.sheddable} C, then at ${surge.times}× that (${load.sheddable * surge.times} C) for ${surge.ms / 1000} s from ${surge.startMs / 1000} s: ${load.critical + load.sheddable * surge.times} C offered. Every bulkhead has \`max: ${scenario.workers}\` (C); clients give up after ${scenario.timeoutMs / 1000} s. Figures are over the requests that arrived during the surge. Targets: critical availability ≥ ${percent(t.availability)}, critical p99 ≤ ${t.p99Ratio}× its p99 in the same run without the surge, total goodput ≥ ${t.goodput} of capacity. Simulated, so the figures are the same on any machine.`,
  )
  out.push('')
  out.push(
    table(
      [
        'contender',
        'critical available',
        'critical p50 / p99 (ms)',
        'p99 without the surge (ms)',
        'p99 ÷ that',
        'goodput ÷ capacity: critical + sheddable = total',
        'sheddable p99 (ms)',
        'targets',
      ],
      scored.map(({ run, calm, p99Ratio, met }) => [
        run.contender.label,
        percent(run.critical.availability),
        `${ms(run.critical.p50Ms)} / ${ms(run.critical.p99Ms)}`,
        ms(calm.critical.p99Ms),
        p99Ratio.toFixed(2),
        `${run.critical.goodput.toFixed(3)} + ${run.sheddable.goodput.toFixed(3)} = ${run.goodput.toFixed(3)}`,
        ms(run.sheddable.p99Ms),
        met ? '**met**' : 'missed',
      ]),
    ),
  )
  out.push('')
  const r = reverse.scenario
  out.push(
    `The other way round: critical traffic surges to ${r.surge.times}× its load (${r.load.critical * r.surge.times} C) for ${r.surge.ms / 1000} s while sheddable traffic stays at ${r.load.sheddable} C. Priorities alone let critical traffic take every slot; a share for sheddable traffic keeps it alive (no targets here; the figures are over the surge):`,
  )
  out.push('')
  out.push(
    table(
      [
        'contender',
        'critical goodput ÷ capacity',
        'sheddable goodput ÷ capacity',
        'sheddable available',
      ],
      reverse.runs.map((run) => [
        run.contender.label,
        run.critical.goodput.toFixed(3),
        run.sheddable.goodput.toFixed(3),
        percent(run.sheddable.availability),
      ]),
    ),
  )
  out.push('')
  out.push(
    [
      `- Discrete-event simulation on the library's \`ManualClock\` (as section 5): Poisson arrivals of each class from seeded mulberry32 streams (seed ${scenario.seed}), service times drawn per arrival from a third, the same for every contender. Each arrival calls \`tryEnter({ priority })\` (\`'critical'\` or \`'sheddable'\`; no priority for the first two rows); if refused, a contender that lets requests wait calls \`enter({ priority, signal })\`, and the client's signal aborts at its timeout. Permits granted to waiters reach the service at the instant they are granted (the simulation lets promise callbacks run before the clock moves).`,
      `- "Available": answered within the clients' timeout, over offered. Goodput ÷ capacity: answers within the timeout per second over ${perSecond.toLocaleString('en-US')}. Latency is from arrival to answer, waiting included, of the requests answered. "Without the surge": the same contender and seed with sheddable traffic at ${load.sheddable} C throughout.`,
      `- "priority + partitions" rows give critical traffic \`partitions: { critical: 0.5 }\`; the queued rows add \`maxQueue: ${QUEUE}\` and the \`queuePolicy\` named (\`'codel'\` and \`'adaptive-lifo'\` at their defaults: 5 ms target, 100 ms interval). Without a queue, a critical request still waits for the slot of sheddable work in flight (it outranks it); a sheddable one is refused at once.`,
      '- The adaptive row uses `adaptiveConcurrency({ partitions })` at its defaults as `max`, over a service that queues what it cannot serve at once (FIFO, as in section 5): its limit goes above C and its probes drop it to 3 every 30 s or so, and a queue inside the service, or a probe, is where priorities cannot help.',
    ].join('\n'),
  )
  out.push('')
  out.push(
    'Chart: [docs/priority-load-shedding.svg](../docs/priority-load-shedding.svg), goodput of each class and the critical p99 per 250 ms through the surge. Write-up: [docs/priority-load-shedding.md](../docs/priority-load-shedding.md).',
  )
  out.push('')
  return out.join('\n')
}
