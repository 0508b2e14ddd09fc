/**
 * `pnpm --filter @sluice/bench bench:priority`: the priority load shedding section alone.
 * Prints the RESULTS.md section and writes docs/priority-load-shedding.svg; `pnpm bench`
 * runs the same section as part of the whole report.
 */
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chartInput, renderPrioritySvg } from './chart'
import { CHART_IDS } from './contenders'
import { runPriority } from './run'
import { renderPrioritySection } from './section'

const SVG = fileURLToPath(new URL('../../../docs/priority-load-shedding.svg', import.meta.url))

const started = performance.now()
const results = await runPriority((line) => console.error(line))
writeFileSync(SVG, renderPrioritySvg(chartInput(results, CHART_IDS)))
console.log(renderPrioritySection(results))
console.error(`wrote ${SVG} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
