import { type Axis, endLabel, escapeXml, polylines, rule, timeAxis } from '../svg'
import type { AdaptiveResults } from './run'

/** What the chart draws: the main scenario's runs. */
export type ChartInput = Pick<AdaptiveResults, 'scenario' | 'noLoadP99Ms' | 'scored'>

const LEFT = 130
const TOP = 34
const X_STEP = 4
const AXIS: Axis = { left: LEFT, step: X_STEP }
const PLOT_H = 70
const PANEL_H = 2 * PLOT_H + 52

/**
 * The limit and the p99 latency of each adaptive algorithm over the simulated run, as
 * an SVG document in the demo's chart style (small multiples, one panel per algorithm).
 *
 * @example
 * ```ts
 * writeFileSync('docs/adaptive-concurrency.svg', renderAdaptiveSvg(runAdaptive(), ALGORITHM_IDS))
 * ```
 */
export function renderAdaptiveSvg(results: ChartInput, ids: readonly string[]): string {
  const { scenario, noLoadP99Ms } = results
  const runs = ids.map((id) => {
    const found = results.scored.find((s) => s.run.contender.id === id)
    if (found === undefined) throw new Error(`no run for contender ${id}`)
    return found.run
  })
  const ticks = Math.max(...runs.map((r) => r.timeline.limit.length))
  const limitTop = Math.ceil(Math.max(...runs.flatMap((r) => r.timeline.limit)) / 20) * 20
  const latencyTop = 3 * noLoadP99Ms
  const width = LEFT + ticks * X_STEP + 30
  const height = TOP + runs.length * PANEL_H + 34
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    '<title>Adaptive concurrency: the limit and the p99 latency of each algorithm under 3× overload</title>',
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="20" font-size="13" font-weight="bold">${escapeXml(`Adaptive limits at their defaults, ${scenario.workers} workers × ${scenario.serviceMs} ms offered ${scenario.load}× their capacity (simulated, 250 ms ticks)`)}</text>`,
  ]
  runs.forEach((run, index) => {
    const limitBase = TOP + index * PANEL_H + PLOT_H + 10
    const latencyBase = limitBase + PLOT_H + 16
    const limitY = (v: number) => limitBase - (Math.min(v, limitTop) / limitTop) * PLOT_H
    const latencyY = (v: number) => latencyBase - (Math.min(v, latencyTop) / latencyTop) * PLOT_H
    out.push('<g>')
    out.push(
      `<text x="8" y="${limitBase - PLOT_H + 12}" font-weight="bold">${escapeXml(run.contender.id)}</text>`,
      `<text x="8" y="${limitBase - PLOT_H / 2 + 4}" fill="#0b7285">limit (0–${limitTop})</text>`,
      `<text x="8" y="${latencyBase - PLOT_H / 2 + 4}" fill="#d9480f">p99 latency</text>`,
      `<text x="8" y="${latencyBase - PLOT_H / 2 + 18}" fill="#495057">(0–${latencyTop.toFixed(0)} ms)</text>`,
      rule(AXIS, limitY(scenario.workers), ticks, '#868e96', true),
      endLabel(AXIS, ticks, limitY(scenario.workers), 'C'),
      rule(AXIS, latencyY(noLoadP99Ms), ticks, '#ced4da', false),
      rule(AXIS, latencyY(2 * noLoadP99Ms), ticks, '#868e96', true),
      endLabel(AXIS, ticks, latencyY(2 * noLoadP99Ms), '2×'),
      ...polylines(AXIS, run.timeline.limit, limitY, '#1098ad'),
      ...polylines(AXIS, run.timeline.p99Ms, latencyY, '#e8590c'),
      rule(AXIS, limitBase, ticks, '#868e96', false),
      rule(AXIS, latencyBase, ticks, '#868e96', false),
    )
    out.push('</g>')
  })
  const axisY = TOP + runs.length * PANEL_H - 8
  out.push(...timeAxis(AXIS, axisY, ticks, scenario.tickMs))
  out.push(
    `<text x="${width - 20}" y="${height - 6}" text-anchor="end" fill="#495057">${escapeXml(`dashed: C = ${scenario.workers} workers, and the target of 2× the no-load p99 (${noLoadP99Ms.toFixed(1)} ms, solid grey) · each limit starts at 3 while the first probe measures the no-load latency; a dip back to 3 is a re-measurement`)}</text>`,
    '</svg>',
    '',
  )
  return out.join('\n')
}
