/**
 * @sluice/nestjs's peer range takes NestJS 10, whose platforms run Express 4 and Fastify 4:
 * its own test files (the adapter scenarios included) run here against those (see vitest.nest10.config.ts, which resolves
 * every NestJS package from this package for them). They need a vitest configuration of
 * their own, so they run in a child vitest; each of their tests is reported here.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { files } from '../vitest.nest10.config'

const root = fileURLToPath(new URL('../../..', import.meta.url))

interface Report {
  testResults: {
    name: string
    assertionResults: { fullName: string; status: string; failureMessages: string[] }[]
  }[]
}

async function runOnNestJs10(): Promise<{ code: number; output: string; report: Report | null }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-nestjs10-'))
  const outputFile = join(dir, 'report.json')
  // The child is a vitest of its own, not a worker of this one.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('VITEST')),
  )
  try {
    const { code, output } = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(
        process.execPath,
        [
          `${root}node_modules/vitest/vitest.mjs`,
          'run',
          '--config',
          'examples/nestjs10/vitest.nest10.config.ts',
          '--reporter=json',
          `--outputFile=${outputFile}`,
        ],
        { cwd: root, env, timeout: 600_000, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const exit = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
          resolve({ code: exit, output: `${stdout}${stderr}` })
        },
      )
    })
    let report: Report | null = null
    try {
      report = JSON.parse(readFileSync(outputFile, 'utf8')) as Report
    } catch {}
    return { code, output, report }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const { code, output, report } = await runOnNestJs10()
const results = (report?.testResults ?? []).flatMap(({ name, assertionResults }) =>
  assertionResults.map((test) => ({ file: name.split('/').pop() ?? name, ...test })),
)

describe('@sluice/nestjs on NestJS 10 (Express 4, Fastify 4)', () => {
  it('ran every file it names, and passed', () => {
    expect(code, output).toBe(0)
    const ran = new Set(results.map((result) => result.file))
    expect([...files, 'versions.test.ts'].filter((file) => !ran.has(file))).toEqual([])
  })

  it.each(results)('$file: $fullName', ({ file, status, failureMessages }) => {
    // The adapter scenarios skip, with their reason, those that cannot apply to a guard.
    const expected = file === 'scenarios.test.ts' && status === 'skipped' ? 'skipped' : 'passed'
    expect(status, failureMessages.join('\n')).toBe(expected)
  })
})
