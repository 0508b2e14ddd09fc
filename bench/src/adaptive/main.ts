/**
 * `pnpm --filter @sluice/bench bench:adaptive`: the adaptive concurrency section alone.
 * Prints the RESULTS.md section and writes docs/adaptive-concurrency.svg; `pnpm bench`
 * runs the same section as part of the whole report.
 */
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { renderAdaptiveSvg } from './chart'
import { ALGORITHM_IDS } from './contenders'
import { runAdaptive } from './run'
import { renderAdaptiveSection } from './section'

const SVG = fileURLToPath(new URL('../../../docs/adaptive-concurrency.svg', import.meta.url))

const started = performance.now()
const results = runAdaptive((line) => console.error(line))
writeFileSync(SVG, renderAdaptiveSvg(results, ALGORITHM_IDS))
console.log(renderAdaptiveSection(results))
console.error(`wrote ${SVG} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
