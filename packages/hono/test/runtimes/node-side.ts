/**
 * The Node side of the runtime tests: bundles a runtime's entry, runs it in that runtime,
 * and turns each result it writes into a vitest test, so the scenarios run on Bun, Deno
 * and workerd show up (and fail) like the Node ones.
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { describe, expect, it } from 'vitest'
import { bundle } from './bundle'
import { DONE, RESULT, type TestResult } from './results'
import type { Runtime } from './unsupported'

const require = createRequire(import.meta.url)
const here = dirname(fileURLToPath(import.meta.url))

/** The binaries the `bun` and `deno` npm packages ship (installed by their postinstall). */
export const binaries = {
  bun: join(dirname(require.resolve('bun/package.json')), 'bin', 'bun.exe'),
  deno: join(dirname(require.resolve('deno/package.json')), 'deno'),
}

/** What workerd runs with: Node's APIs (diagnostics_channel, process) and request.signal. */
export const WORKERD = {
  compatibilityDate: '2025-09-01',
  compatibilityFlags: ['nodejs_compat', 'enable_request_signal'],
}

/** A runtime's run: its results, whether it got to the end, and what else it printed. */
export interface Run {
  readonly results: TestResult[]
  readonly done: boolean
  readonly exitCode: number | null
  readonly output: string
}

/** The results a run wrote (see `runAndWrite`), and whether it wrote its closing line. */
export function parse(text: string): Pick<Run, 'results' | 'done'> {
  const results: TestResult[] = []
  let done = false
  for (const line of text.split('\n')) {
    if (line.startsWith(RESULT)) results.push(JSON.parse(line.slice(RESULT.length)) as TestResult)
    else if (line.startsWith(DONE)) done = Number(line.slice(DONE.length)) === results.length
  }
  return { results, done }
}

/** Runs `file` with `command`, collecting its output; killed after `timeoutMs`. */
export function execute(
  command: string,
  args: string[],
  timeoutMs = 120_000,
): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.on('error', reject)
    child.on('close', (exitCode) => resolve({ exitCode, stdout, stderr }))
  })
}

/** Runs the scenario list inside Bun, Deno or workerd (through miniflare). */
export async function runOn(runtime: Runtime): Promise<Run> {
  if (runtime === 'workerd') return runOnWorkerd()
  const entry = await bundle(runtime === 'Bun' ? 'bun.ts' : 'deno.ts')
  try {
    const { exitCode, stdout, stderr } =
      runtime === 'Bun'
        ? await execute(binaries.bun, ['run', entry.file])
        : await execute(binaries.deno, ['run', '--allow-net', '--allow-env', entry.file])
    return { ...parse(stdout), exitCode, output: `${stdout}${stderr}` }
  } finally {
    entry.remove()
  }
}

async function runOnWorkerd(): Promise<Run> {
  const entry = await bundle('workerd.ts', {
    replace: { 'node:http': join(here, 'fetch-http.ts') },
  })
  const mf = new Miniflare({
    modules: true,
    scriptPath: entry.file,
    modulesRoot: dirname(entry.file),
    ...WORKERD,
    port: 0,
  })
  try {
    const url = await mf.ready
    const res = await fetch(new URL('/__sluice/run', url))
    const text = await res.text()
    return { ...parse(text), exitCode: res.ok ? 0 : res.status, output: text }
  } finally {
    await mf.dispose()
    entry.remove()
  }
}

/**
 * Registers one vitest test per result of `run`, under `title`: a failure fails it with
 * the runtime's error; a scenario the runtime cannot run is skipped, its reason in the name.
 * A run that stopped early, or reported fewer than `atLeast` results, fails too.
 */
export function report(title: string, run: Run, atLeast = 50): void {
  describe(title, () => {
    it('ran the whole list to its end', () => {
      expect(run.exitCode, run.output).toBe(0)
      expect(run.done, run.output).toBe(true)
      expect(run.results.length).toBeGreaterThanOrEqual(atLeast)
    })
    for (const result of run.results) {
      const skipped = result.status === 'skipped'
      it.skipIf(skipped)(
        skipped ? `${result.name} (not on this runtime: ${result.error})` : result.name,
        () => {
          if (result.status === 'failed') throw new Error(result.error)
        },
      )
    }
  })
}
