import { type Axis, endLabel, escapeXml, polylines, rule, timeAxis } from '../svg'
import { CALM_REFERENCE } from './contenders'
import { PRIORITY_TARGETS, type PriorityResults } from './run'
import type { PriorityRun, PriorityScenario } from './simulate'

/**
 * What the chart draws: runs of the main scenario, and the critical p99 without the
 * surge and without priorities, which the target's bound is drawn from.
 */
export interface PriorityChartInput {
  readonly scenario: PriorityScenario
  readonly runs: readonly PriorityRun[]
  readonly calmP99Ms: number
}

const LEFT = 150
const TOP = 34
const X_STEP = 4
const AXIS: Axis = { left: LEFT, step: X_STEP }
const PLOT_H = 70
const PANEL_H = 2 * PLOT_H + 52
const CRITICAL = '#1971c2'
const SHEDDABLE = '#e8590c'

/**
 * Each run's goodput per class and critical p99 latency over the simulated surge, as an
 * SVG document in the style of docs/adaptive-concurrency.svg (one panel per contender,
 * the surge shaded).
 *
 * @example
 * ```ts
 * writeFileSync('docs/priority-load-shedding.svg', renderPrioritySvg(chartInput(results)))
 * ```
 */
export function renderPrioritySvg(input: PriorityChartInput): string {
  const { scenario, runs: picked, calmP99Ms } = input
  const ticks = Math.max(...picked.map((run) => run.timeline.critical.length))
  const goodputTop = 1.2
  const latencyTop = 3 * calmP99Ms
  const bound = PRIORITY_TARGETS.p99Ratio * calmP99Ms
  const width = LEFT + ticks * X_STEP + 40
  const height = TOP + picked.length * PANEL_H + 34
  const surgeX = LEFT + (scenario.surge.startMs / scenario.tickMs) * X_STEP
  const surgeW = (scenario.surge.ms / scenario.tickMs) * X_STEP
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<title>Priority load shedding: goodput of critical and sheddable traffic and the critical p99 through a ${scenario.surge.times}× sheddable surge</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<rect x="${surgeX}" y="${TOP}" width="${surgeW}" height="${picked.length * PANEL_H - 24}" fill="#f1f3f5"/>`,
    `<text x="${LEFT}" y="20" font-size="13" font-weight="bold">${escapeXml(`A ${scenario.surge.times}× sheddable surge, C = ${scenario.workers} workers × ${scenario.serviceMs} ms, critical at ${scenario.load.critical} C (simulated, ${scenario.tickMs} ms ticks; shaded: the surge)`)}</text>`,
  ]
  picked.forEach((run, index) => {
    const goodputBase = TOP + index * PANEL_H + PLOT_H + 10
    const latencyBase = goodputBase + PLOT_H + 16
    const goodputY = (v: number) => goodputBase - (Math.min(v, goodputTop) / goodputTop) * PLOT_H
    const latencyY = (v: number) => latencyBase - (Math.min(v, latencyTop) / latencyTop) * PLOT_H
    out.push('<g>')
    out.push(
      `<text x="8" y="${goodputBase - PLOT_H + 12}" font-weight="bold">${escapeXml(run.contender.id)}</text>`,
      `<text x="8" y="${goodputBase - PLOT_H / 2 + 4}" fill="${CRITICAL}">critical goodput</text>`,
      `<text x="8" y="${goodputBase - PLOT_H / 2 + 18}" fill="${SHEDDABLE}">sheddable goodput</text>`,
      `<text x="8" y="${goodputBase - PLOT_H / 2 + 32}" fill="#495057">(÷ capacity, 0–${goodputTop})</text>`,
      `<text x="8" y="${latencyBase - PLOT_H / 2 + 4}" fill="${CRITICAL}">critical p99</text>`,
      `<text x="8" y="${latencyBase - PLOT_H / 2 + 18}" fill="#495057">(0–${latencyTop.toFixed(0)} ms)</text>`,
      rule(AXIS, goodputY(1), ticks, '#868e96', true),
      endLabel(AXIS, ticks, goodputY(1), 'C'),
      rule(AXIS, goodputY(scenario.load.critical), ticks, '#ced4da', false),
      rule(AXIS, latencyY(calmP99Ms), ticks, '#ced4da', false),
      rule(AXIS, latencyY(bound), ticks, '#868e96', true),
      endLabel(AXIS, ticks, latencyY(bound), `${PRIORITY_TARGETS.p99Ratio}×`),
      ...polylines(AXIS, run.timeline.critical, goodputY, CRITICAL),
      ...polylines(AXIS, run.timeline.sheddable, goodputY, SHEDDABLE),
      ...polylines(AXIS, run.timeline.criticalP99Ms, latencyY, CRITICAL),
      rule(AXIS, goodputBase, ticks, '#868e96', false),
      rule(AXIS, latencyBase, ticks, '#868e96', false),
    )
    out.push('</g>')
  })
  const axisY = TOP + picked.length * PANEL_H - 8
  out.push(...timeAxis(AXIS, axisY, ticks, scenario.tickMs))
  out.push(
    `<text x="${width - 20}" y="${height - 6}" text-anchor="end" fill="#495057">${escapeXml(`dashed: the capacity C, and the target of ${PRIORITY_TARGETS.p99Ratio}× the critical p99 without the surge or priorities (${calmP99Ms.toFixed(1)} ms, solid grey); solid grey in the goodput plot: the critical demand, ${scenario.load.critical} C`)}</text>`,
    '</svg>',
    '',
  )
  return out.join('\n')
}

/**
 * The chart's input from a whole section's results: the runs of `ids`, and the p99 of
 * the contender without priorities in the calm run.
 *
 * @example
 * ```ts
 * renderPrioritySvg(chartInput(await runPriority(), CHART_IDS))
 * ```
 */
export function chartInput(results: PriorityResults, ids: readonly string[]): PriorityChartInput {
  const find = (id: string) => {
    const found = results.scored.find((s) => s.run.contender.id === id)
    if (found === undefined) throw new Error(`no run for contender ${id}`)
    return found
  }
  return {
    scenario: results.scenario,
    runs: ids.map((id) => find(id).run),
    calmP99Ms: find(CALM_REFERENCE).calm.critical.p99Ms,
  }
}
