import { percentile } from '../stats'
import { ADAPTIVE_TARGETS, type AdaptiveResults, ROBUSTNESS } from './run'
import { capacityPerMs } from './simulate'

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

const verdict = (met: boolean) => (met ? '**met**' : 'missed')

/** Median limit over the second half of the run: where the limit settled, probes aside. */
function settled(limits: readonly number[]): string {
  const half = limits.slice(Math.floor(limits.length / 2))
  return half.some(Number.isNaN) ? 'none' : String(percentile(half, 50))
}

/**
 * The "Adaptive concurrency (issue 16)" section of RESULTS.md, body only (the caller
 * writes the heading): scenario, main table, robustness table, method.
 *
 * @example
 * ```ts
 * out.push('## 5. Adaptive concurrency (issue 16)', '', renderAdaptiveSection(runAdaptive()))
 * ```
 */
export function renderAdaptiveSection(results: AdaptiveResults): string {
  const { scenario, noLoadP99Ms } = results
  const perSecond = capacityPerMs(scenario) * 1000
  const out: string[] = []
  out.push(
    `A downstream of C = ${scenario.workers} workers, ${scenario.serviceMs} ms per request (exponentially distributed), so ${perSecond.toLocaleString('en-US')} requests per second at most, offered ${scenario.load}× that for ${scenario.durationMs / 1000} simulated seconds. Targets: goodput ≥ ${ADAPTIVE_TARGETS.goodput} of capacity and p99 latency of admitted requests ≤ ${ADAPTIVE_TARGETS.p99Ratio}× the no-load p99 (${noLoadP99Ms.toFixed(1)} ms), with every algorithm at its defaults. Simulated, so the figures are the same on any machine.`,
  )
  out.push('')
  out.push(
    table(
      [
        'contender',
        'median limit, second half',
        'goodput ÷ capacity',
        'p99 of admitted (ms)',
        'p99 ÷ no-load p99',
        'targets',
      ],
      results.scored.map(({ run, p99Ratio, met }) => [
        run.contender.label,
        settled(run.timeline.limit),
        run.goodput.toFixed(3),
        run.p99Ms.toFixed(1),
        p99Ratio.toFixed(2),
        verdict(met),
      ]),
    ),
  )
  out.push('')
  const cs = ROBUSTNESS.workers
  const ids = [...new Set(results.robustness.map((r) => r.contender.id))]
  out.push(
    `Without tuning, on other downstreams: C from ${cs[0]} to ${cs[cs.length - 1]} workers, same service time and overload, the worst goodput and the worst p99 ratio over seeds ${ROBUSTNESS.seeds.join(', ')} (goodput / p99 ratio; "fixed, right" is a fixed limit of C, which a user would have to know):`,
  )
  out.push('')
  out.push(
    table(
      ['contender', ...cs.map((c) => `C = ${c}`)],
      ids.map((id) => {
        const cells = results.robustness.filter((r) => r.contender.id === id)
        return [
          cells[0]?.contender.label ?? id,
          ...cells.map(
            (r) => `${r.goodput.toFixed(2)} / ${r.p99Ratio.toFixed(2)}${r.met ? '' : ' ✗'}`,
          ),
        ]
      }),
    ),
  )
  out.push('')
  out.push(
    [
      `- Discrete-event simulation on the library's \`ManualClock\`: Poisson arrivals, a FIFO queue in front of the C workers, one event per arrival and completion, the clock set to each event's time before the limiter sees it. Arrival gaps and service times come from seeded mulberry32 streams (seed ${scenario.seed}), the same for every contender.`,
      `- A contender's \`tryEnter()\` admits or refuses each arrival (refused requests are answered at once and cost the downstream nothing). An admitted request holds its permit until the downstream completes it; the permit is released with \`dropped: true\` when that took over the clients' ${scenario.timeoutMs} ms timeout, and such a response is not goodput. Goodput ÷ capacity: responses within the timeout per second over ${perSecond.toLocaleString('en-US')}.`,
      `- No-load p99: the same downstream with no limit at a tenth of its capacity. p99 of admitted: every admitted request's latency, queueing included, over the whole run (start-up and probes too).`,
      '- Adaptive limiters run with their defaults; only the clock and a seeded source for the probe jitter are passed in. The chart shows the lowest limit in force in each 250 ms, so probes show.',
    ].join('\n'),
  )
  out.push('')
  out.push(
    'Chart: [docs/adaptive-concurrency.svg](../docs/adaptive-concurrency.svg), the limit and the p99 latency per 250 ms of each algorithm over the run.',
  )
  out.push('')
  return out.join('\n')
}
