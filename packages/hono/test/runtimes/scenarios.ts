/**
 * Runs the shared adapter scenarios inside the runtime this bundle is loaded by (Bun, Deno
 * or workerd), through the vitest shim, and writes each result as one JSON line.
 */
import { type AdapterHarness, runAdapterScenarios } from '@sluice/http/testing'
import { honoCallbacks } from '../scenario-app'
import { type Runtime, unsupportedOn } from './unsupported'
import { run } from './vitest-shim'

/** Precedes every result line, so the runtime's own output can be told apart. */
export const RESULT = 'sluice-result '
/** The last line, with the number of results: the run got to its end. */
export const DONE = 'sluice-done '

/**
 * Registers the shared scenarios (and `more`, what only this runtime needs checked) on the
 * shim, runs them, and writes each result, then the closing line.
 */
export async function runScenarios(
  runtime: Runtime,
  start: AdapterHarness['start'],
  write: (line: string) => void | Promise<void>,
  more?: () => void,
): Promise<void> {
  runAdapterScenarios({ name: `hono on ${runtime}`, start, ...honoCallbacks })
  more?.()
  let count = 0
  await run((result) => {
    count++
    return write(`${RESULT}${JSON.stringify(result)}\n`)
  }, unsupportedOn(runtime))
  await write(`${DONE}${count}\n`)
}
