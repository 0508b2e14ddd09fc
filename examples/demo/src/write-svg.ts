import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { renderSvg } from './render'
import { simulate } from './simulate'

const SVG_PATH = fileURLToPath(new URL('../../../docs/algorithms.svg', import.meta.url))

writeFileSync(SVG_PATH, renderSvg(simulate()))
console.log(`wrote ${SVG_PATH}`)
