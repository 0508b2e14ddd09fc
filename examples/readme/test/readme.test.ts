import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, inject, it } from 'vitest'

/** Runs a command to its end: exit code and everything it wrote. */
function run(file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  return new Promise<{ code: number; output: string }>((resolve) => {
    execFile(file, args, { ...options, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
      resolve({ code, output: `${stdout}${stderr}` })
    })
  })
}
const here = fileURLToPath(new URL('..', import.meta.url))
const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
const redisPort = inject('redisPort')

/** Every ```ts block of the README, with the line it starts on. */
const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => ({
  code: match[1] ?? '',
  line: readme.slice(0, match.index).split('\n').length,
}))

const dir = `${here}.blocks`
rmSync(dir, { recursive: true, force: true })
mkdirSync(dir)
const files = blocks.map(({ code, line }) => {
  const file = `${dir}/readme-line-${line}.ts`
  writeFileSync(file, code)
  return file
})

describe('README.md', () => {
  it('has TypeScript blocks to check', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(10)
  })

  it('every pnpm command of its shell blocks names a script of the root package', () => {
    const { scripts } = JSON.parse(
      readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
    ) as { scripts: Record<string, string> }
    const shell = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '')
    // Comments aside, `pnpm install` is pnpm's own; every other `pnpm X` must be a script.
    const named = shell
      .map((block) => block.replace(/#.*$/gm, ''))
      .flatMap((block) => [...block.matchAll(/\bpnpm (?:run )?([a-z:]+)/g)])
      .map((m) => m[1] ?? '')
      .filter((name) => name !== 'install')
    expect(named).toEqual(expect.arrayContaining(['demo', 'test', 'bench', 'docs']))
    expect(named.filter((name) => scripts[name] === undefined)).toEqual([])
  })

  it('every block type-checks against the packages as they are', async () => {
    const result = await run('pnpm', ['exec', 'tsc', '-p', 'tsconfig.blocks.json'], { cwd: here })
    expect(result).toEqual({ code: 0, output: '' })
  })

  const usesRedis = (code: string) => code.includes('@sluice/redis')
  describe.each(blocks.map((block, i) => ({ ...block, file: files[i] ?? '' })))(
    'block at line $line',
    ({ code, file }) => {
      it.skipIf(usesRedis(code) && redisPort === null)('runs and exits cleanly', async () => {
        const env = { ...process.env, REDIS_URL: `redis://127.0.0.1:${redisPort}` }
        const result = await run(
          process.execPath,
          ['--conditions=@sluice/source', '--import', 'tsx', 'test/run-block.ts', file],
          { cwd: here, env },
        )
        // Blocks print what a reader would see; only a clean exit is required.
        expect(result.code, result.output).toBe(0)
      })
    },
  )
})
