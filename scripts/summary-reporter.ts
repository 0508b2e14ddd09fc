import type { Reporter, SerializedError, TestModule } from 'vitest/node'

/**
 * Prints the one closing line CI reads, `N passed, N failed`, alone and last (the skipped
 * count, when any, on the line before it), summed over every test file of every project. A file that fails to load and an
 * unhandled error each count as one failure, so they can never hide behind a green count.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ): void {
    let passed = 0
    let failed = unhandledErrors.length
    let skipped = 0
    for (const mod of testModules) {
      let tests = 0
      for (const test of mod.children.allTests()) {
        tests++
        const state = test.result().state
        if (state === 'passed') passed++
        else if (state === 'failed') failed++
        else skipped++
      }
      if (mod.errors().length > 0 || (tests === 0 && mod.state() === 'failed')) failed++
    }
    const skippedLine = skipped > 0 ? `${skipped} skipped\n` : ''
    process.stdout.write(`\n${skippedLine}${passed} passed, ${failed} failed\n`)
  }
}
