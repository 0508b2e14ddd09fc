import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { httpTour, renderSteps } from './http-tour'
import { renderSvg, renderText } from './render'
import { simulate } from './simulate'

const runs = simulate()
console.log('Six limiters, each allowing 10 per second, under the same bursty traffic.')
console.log('One column per 100 ms: offered requests above, what got through below.\n')
console.log(renderText(runs, process.stdout.isTTY === true))

const svgPath = fileURLToPath(new URL('../../../docs/algorithms.svg', import.meta.url))
writeFileSync(svgPath, renderSvg(runs))
console.log(`\nThe same charts as SVG: ${svgPath}`)

console.log(
  '\nNow the Express example (examples/express-api) on a loopback port, with small limits:',
)
console.log(
  '8 requests a minute per client overall, 2 failed logins per 15 minutes, 2 reports at once.\n',
)
console.log(renderSteps(await httpTour()))
