import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, inject, it } from 'vitest'

/** Runs a command to its end: exit code and everything it wrote. */
function run(file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  return new Promise<{ code: number; output: string }>((resolve) => {
    execFile(file, args, { ...options, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
      resolve({ code, output: `${stdout}${stderr}` })
    })
  })
}
const here = fileURLToPath(new URL('..', import.meta.url))
const root = fileURLToPath(new URL('../../..', import.meta.url))
const redisPort = inject('redisPort')

/**
 * The documents whose TypeScript blocks are checked: what a reader sees on GitHub (the root
 * README, the migration guide) and on npm (each package's README).
 */
const documents = [
  'README.md',
  ...readdirSync(`${root}packages`)
    .map((dir) => `packages/${dir}/README.md`)
    .filter((file) => existsSync(`${root}${file}`)),
  'docs/migrating.md',
]

/**
 * A block preceded by `<!-- not run: why -->` is shown but neither type-checked nor run
 * (it needs an API that is announced but not there yet); the test lists it as skipped.
 */
const NOT_RUN = /<!-- not run: ([^>]*?) -->\s*$/

interface Block {
  document: string
  line: number
  code: string
  file: string
  notRun: string | undefined
}

const dir = `${here}.blocks`
rmSync(dir, { recursive: true, force: true })
mkdirSync(dir)

const blocks: Block[] = documents.flatMap((document) => {
  const text = readFileSync(`${root}${document}`, 'utf8')
  const slug = document.replace(/\/README\.md$|\.md$/, '').replace(/[^\w]+/g, '-')
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => {
    const before = text.slice(0, match.index)
    const line = before.split('\n').length
    const file = `${dir}/${slug}-line-${line}.ts`
    const notRun = NOT_RUN.exec(before)?.[1]
    // `export {}` keeps each block a module, so blocks never share top-level names.
    if (notRun === undefined) writeFileSync(file, `${match[1] ?? ''}export {}\n`)
    return { document, line, code: match[1] ?? '', file, notRun }
  })
})

describe('README.md', () => {
  const readme = readFileSync(`${root}README.md`, 'utf8')

  it('every pnpm command of its shell blocks names a script of the root package', () => {
    const { scripts } = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
      scripts: Record<string, string>
    }
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

  it('starts with the two commands: set up and run the demo, run the tests', () => {
    const first = /^```sh\n([\s\S]*?)^```$/m.exec(readme)?.[1] ?? ''
    const commands = first.split('\n').map((line) => line.replace(/#.*$/, '').trim())
    expect(commands.filter((line) => line !== '')).toEqual([
      'npm install -g pnpm@12.4.2 && pnpm install && pnpm demo',
      'pnpm test',
    ])
    expect(readme.indexOf('```sh')).toBeLessThan(readme.indexOf('```ts'))
  })

  it('leads adopters to npm install before any TypeScript', () => {
    expect(readme.indexOf('npm install @sluice/express')).toBeGreaterThan(0)
    expect(readme.indexOf('npm install @sluice/express')).toBeLessThan(readme.indexOf('```ts'))
  })
})

describe.each(documents)('%s', (document) => {
  const mine = blocks.filter((block) => block.document === document)

  it('has TypeScript blocks to check', () => {
    expect(mine.length).toBeGreaterThanOrEqual(document === 'README.md' ? 10 : 1)
  })

  const usesRedis = (code: string) => code.includes('@sluice/redis')
  describe.each(mine)('block at line $line', ({ code, file, notRun }) => {
    it.skipIf(notRun !== undefined || (usesRedis(code) && redisPort === null))(
      `runs and exits cleanly${notRun === undefined ? '' : ` (not run: ${notRun})`}`,
      async () => {
        const env = { ...process.env, REDIS_URL: `redis://127.0.0.1:${redisPort}` }
        const result = await run(
          process.execPath,
          ['--conditions=@sluice/source', '--import', 'tsx', 'test/run-block.ts', file],
          { cwd: here, env },
        )
        // Blocks print what a reader would see; only a clean exit is required.
        expect(result.code, result.output).toBe(0)
      },
    )
  })
})

describe('every block', () => {
  it('type-checks against the packages as they are', async () => {
    // tsc itself, not through pnpm: a package manager may print banners of its own.
    const tsc = `${root}node_modules/typescript/bin/tsc`
    // One tsc over every block and the packages they import: about 25 s on two busy cores.
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.blocks.json'], { cwd: here })
    expect(result.code, result.output).toBe(0)
  }, 120_000)
})
