/**
 * Runs the shared adapter scenarios inside the runtime this bundle is loaded by (Bun, Deno
 * or workerd), through the vitest shim, and writes each result as one JSON line.
 */
import { type AdapterHarness, runAdapterScenarios } from '@sluice/http/testing'
import { honoCallbacks } from '../scenario-app'
import { type Runtime, unsupportedOn } from './unsupported'
import { runAndWrite } from './vitest-shim'

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
  await runAndWrite(write, unsupportedOn(runtime))
}
