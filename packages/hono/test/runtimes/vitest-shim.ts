/**
 * The part of vitest's API the shared scenario list uses (`describe`, `it`, `it.each`,
 * `afterEach`, `expect`), for running that list unchanged inside Bun, Deno and workerd,
 * where vitest itself does not run. The runtime's bundle maps `vitest` to this module;
 * `expect` is vitest's own (`@vitest/expect` on chai), so matchers behave the same.
 * `run()` executes what was registered, one test at a time, and reports each result.
 */
import {
  ASYMMETRIC_MATCHERS_OBJECT,
  ChaiStyleAssertions,
  chai,
  GLOBAL_EXPECT,
  getState,
  JestAsymmetricMatchers,
  JestChaiExpect,
  JestExtend,
  setState,
} from '@vitest/expect'
import { DONE, RESULT, type TestResult } from './results'

export type { TestResult } from './results'

chai.use(JestExtend)
chai.use(JestChaiExpect)
chai.use(ChaiStyleAssertions)
chai.use(JestAsymmetricMatchers)

type ExpectFn = ((value: unknown, message?: string) => Chai.Assertion) & Record<string, unknown>

function createExpect(): ExpectFn {
  const expect = ((value: unknown, message?: string) => {
    const { assertionCalls } = getState(expect as never)
    setState({ assertionCalls: assertionCalls + 1 }, expect as never)
    return chai.expect(value, message)
  }) as ExpectFn
  Object.assign(expect, chai.expect)
  Object.assign(expect, (globalThis as Record<symbol, unknown>)[ASYMMETRIC_MATCHERS_OBJECT])
  setState({ assertionCalls: 0, isExpectingAssertions: false }, expect as never)
  ;(globalThis as Record<symbol, unknown>)[GLOBAL_EXPECT] = expect
  return expect
}

export const expect = createExpect()

type TestFn = () => unknown | Promise<unknown>

interface Suite {
  readonly name: string
  readonly afterEach: TestFn[]
  readonly parent: Suite | undefined
}

interface Test {
  readonly name: string
  readonly suite: Suite
  readonly fn: TestFn
}

const root: Suite = { name: '', afterEach: [], parent: undefined }
let current = root
const tests: Test[] = []

export function describe(name: string, fn: () => void): void {
  const parent = current
  current = { name, afterEach: [], parent }
  try {
    fn()
  } finally {
    current = parent
  }
}

/** vitest's `%s`/`%i`/`%d`/`%j` placeholders, filled from one row of an `each` table. */
function format(name: string, row: unknown): string {
  const args = Array.isArray(row) ? [...row] : [row]
  return name.replace(/%[sidj]/g, (placeholder) => {
    const arg = args.shift()
    return placeholder === '%j' ? JSON.stringify(arg) : String(arg)
  })
}

function test(name: string, fn: TestFn): void {
  tests.push({ name, suite: current, fn })
}

export const it = Object.assign(test, {
  each:
    <Row>(rows: readonly Row[]) =>
    (name: string, fn: (...args: never[]) => unknown) => {
      for (const row of rows) {
        const args = (Array.isArray(row) ? row : [row]) as never[]
        test(format(name, row), () => fn(...args))
      }
    },
})

export function afterEach(fn: TestFn): void {
  current.afterEach.push(fn)
}

/** The full name as vitest shows it: the describe titles and the test's, joined by ' > '. */
export function fullName(test: Test): string {
  const names = [test.name]
  for (let suite: Suite | undefined = test.suite; suite !== root && suite; suite = suite.parent) {
    names.unshift(suite.name)
  }
  return names.join(' > ')
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`
  return String(error)
}

async function withTimeout(fn: TestFn, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`test timed out in ${ms} ms`)), ms)
  })
  try {
    await Promise.race([Promise.resolve().then(fn), timeout])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Runs every registered test in order (each with the `afterEach` hooks of its suites,
 * innermost first), handing each result to `report` as it is known. A test for which
 * `unsupported` gives a reason is reported as skipped with that reason, not run.
 */
export async function run(
  report: (result: TestResult) => void | Promise<void>,
  unsupported: (name: string) => string | undefined = () => undefined,
  timeoutMs = 20_000,
): Promise<void> {
  for (const test of tests) {
    const name = fullName(test)
    const reason = unsupported(name)
    if (reason !== undefined) {
      await report({ name, status: 'skipped', ms: 0, error: reason })
      continue
    }
    const started = performance.now()
    let error: unknown
    let failed = false
    try {
      await withTimeout(test.fn, timeoutMs)
    } catch (thrown) {
      failed = true
      error = thrown
    }
    for (let suite: Suite | undefined = test.suite; suite; suite = suite.parent) {
      for (const hook of suite.afterEach) {
        try {
          await withTimeout(hook, timeoutMs)
        } catch (thrown) {
          if (!failed) error = thrown
          failed = true
        }
      }
    }
    const ms = Math.round(performance.now() - started)
    await report(
      failed
        ? { name, status: 'failed', ms, error: describeError(error) }
        : { name, status: 'passed', ms },
    )
  }
}

/**
 * Runs every registered test (see {@link run}) and writes each result as one JSON line,
 * then the closing line, for the Node side to read back (`node-side.ts`).
 */
export async function runAndWrite(
  write: (line: string) => void | Promise<void>,
  unsupported?: (name: string) => string | undefined,
): Promise<void> {
  let count = 0
  await run((result) => {
    count++
    return write(`${RESULT}${JSON.stringify(result)}\n`)
  }, unsupported)
  await write(`${DONE}${count}\n`)
}
