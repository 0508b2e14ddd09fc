/**
 * How a runtime reports test results to the Node side: one line per test, then a closing
 * line. Kept apart from the shim, which Node must not load (it sets up vitest's expect).
 */

/** Precedes every result line, so the runtime's own output can be told apart. */
export const RESULT = 'sluice-result '
/** The last line, with the number of results: the run got to its end. */
export const DONE = 'sluice-done '

/** What one test came to: `skipped` tests carry the reason they cannot run here. */
export interface TestResult {
  readonly name: string
  readonly status: 'passed' | 'failed' | 'skipped'
  readonly ms: number
  readonly error?: string
}
