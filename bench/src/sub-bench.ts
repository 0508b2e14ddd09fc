/**
 * The benches that run in processes of their own (Redis leases, the cluster store's
 * workers, NestJS apps), run from `pnpm bench` so that RESULTS.md holds them from the same
 * run as everything else. Each prints its own tables; they are kept as printed.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { takeTargets } from './issue27'
import type { TargetRow } from './targets'

export interface SubBench {
  readonly title: string
  /** The script, from bench/src. */
  readonly script: string
  readonly args?: readonly string[]
  readonly env?: Readonly<Record<string, string>>
}

export interface SubBenchResult {
  readonly bench: SubBench
  /** What it printed, without its `TARGET` lines. */
  readonly output: string
  /** The targets it judged (`TARGET <json>` lines, see `issue27.ts`). */
  readonly targets: readonly (TargetRow & { id: string })[]
  readonly error: string | undefined
  /** The error of a first run that died, when this is the second. */
  readonly retried?: string | undefined
  /** The end of what it wrote to stderr, when it failed. */
  readonly stderr?: string | undefined
  /** The same of the first run, when this is the second. */
  readonly retriedStderr?: string | undefined
}

const TSX = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url))
const SRC = fileURLToPath(new URL('.', import.meta.url))

export const SUB_BENCHES: readonly SubBench[] = [
  {
    title: 'Priority load shedding on real sockets (issue 29)',
    script: 'priority/http-check.ts',
  },
  { title: 'Quota leases on Redis (issue 27)', script: 'leases/main.ts', args: ['3'] },
  {
    title: 'Live reconfiguration: a decision once nothing changes (issue 28)',
    script: 'reconfigure/main.ts',
    args: ['7', '2'],
  },
  {
    title: 'Cluster store, 4 workers (issue 27)',
    script: 'cluster/main.ts',
    env: { BENCH_CLUSTER_SECONDS: '3' },
  },
  {
    title: "NestJS: sluice's guard against @nestjs/throttler (issue 30)",
    script: 'nestjs.ts',
    // The guard's source uses legacy decorators, as Nest apps compile them.
    env: {
      TSX_TSCONFIG_PATH: fileURLToPath(
        new URL('../../packages/nestjs/tsconfig.json', import.meta.url),
      ),
    },
  },
]

/** Runs one sub-bench to its end; a failure is reported, never thrown. */
export function runSubBench(bench: SubBench, log: (line: string) => void): Promise<SubBenchResult> {
  return new Promise((resolve) => {
    const child = spawn(
      TSX,
      ['--conditions=@sluice/source', `${SRC}${bench.script}`, ...(bench.args ?? [])],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), env: { ...process.env, ...bench.env } },
    )
    let output = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      for (const line of chunk.toString().split('\n')) {
        if (line.trim() !== '' && !line.startsWith('TARGET ')) log(`  ${line}`)
      }
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    child.on('error', (error) => {
      stderr += `${error.stack ?? error.message}\n`
    })
    child.on('close', (code, signal) => {
      const { rows, rest } = takeTargets(output)
      resolve({
        bench,
        output: rest,
        targets: rows,
        error: code === 0 ? undefined : `exited with ${code ?? signal}`,
        ...(code === 0 ? {} : { stderr: lastLines(stderr, STDERR_LINES) }),
      })
    })
  })
}

/** How much of a failed sub-bench's stderr the report keeps: a whole stack trace and what led to it. */
const STDERR_LINES = 80

function lastLines(text: string, n: number): string {
  const lines = text.trimEnd().split('\n')
  const kept = lines.slice(-n).join('\n')
  return lines.length > n ? `… (${lines.length - n} lines before)\n${kept}` : kept
}

/** The sub-benches' sections of RESULTS.md. */
export function renderSubBenches(results: readonly SubBenchResult[], first: number): string {
  const out: string[] = []
  results.forEach((result, i) => {
    out.push(`## ${first + i}. ${result.bench.title}`)
    out.push('')
    out.push(
      `\`pnpm bench\` ran \`src/${result.bench.script}\` in a process of its own; its output as printed:`,
    )
    out.push('')
    if (result.error !== undefined) out.push(`**Failed: ${result.error}**\n`)
    if (result.stderr !== undefined && result.stderr !== '') {
      out.push(['Its stderr (the end):', '', '```text', result.stderr, '```', ''].join('\n'))
    }
    if (result.retried !== undefined) {
      out.push(`A first run died (${result.retried}); this is the second.\n`)
      if (result.retriedStderr !== undefined && result.retriedStderr !== '') {
        out.push(
          ['Its stderr (the end):', '', '```text', result.retriedStderr, '```', ''].join('\n'),
        )
      }
    }
    // Markdown tables stay tables; anything else is kept as printed.
    const lines = result.output.split('\n')
    const tables = lines.some((line) => line.startsWith('|'))
    out.push(tables ? result.output.trim() : ['```text', result.output.trim(), '```'].join('\n'))
    out.push('')
  })
  return out.join('\n')
}
