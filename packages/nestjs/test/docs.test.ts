/**
 * The Nest blocks of the documentation, run as written: the README's and those of
 * docs/migrating.md's @nestjs/throttler section. examples/readme runs every other block,
 * but not these (it compiles TC39 decorators); they are marked `<!-- not run: … -->` there
 * and run here instead, as a Nest app is built by default: TypeScript to CommonJS with
 * legacy decorators and their design metadata (what `nest build` leaves in dist/), started
 * with node. They are type-checked as well.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, inject, it } from 'vitest'

const here = fileURLToPath(new URL('..', import.meta.url))
const root = fileURLToPath(new URL('../../..', import.meta.url))
const redisPort = inject('redisPort')

/** Runs a command to its end: exit code and everything it wrote. */
function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  return new Promise<{ code: number; stdout: string; output: string }>((resolve) => {
    execFile(file, args, { cwd: here, env, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
      resolve({ code, stdout, output: `${stdout}${stderr}` })
    })
  })
}

interface Block {
  document: string
  line: number
  code: string
  /** The block as written, a module of its own. */
  source: string
  /** What Nest's default build makes of it. */
  built: string
}

const dir = `${here}.blocks`
rmSync(dir, { recursive: true, force: true })
mkdirSync(dir)

/** The `ts` blocks of a document, or of one section of it (a `## ` heading to the next). */
function blocksOf(document: string, section?: string): Block[] {
  let text = readFileSync(`${root}${document}`, 'utf8')
  let offset = 0
  if (section !== undefined) {
    offset = text.indexOf(`\n${section}\n`)
    const end = text.indexOf('\n## ', offset + 1)
    text = text.slice(0, end === -1 ? undefined : end)
  }
  const slug = document.replace(/\/README\.md$|\.md$/, '').replace(/[^\w]+/g, '-')
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)]
    .filter((match) => (match.index ?? 0) > offset)
    .map((match) => {
      const line = text.slice(0, match.index).split('\n').length
      const code = match[1] ?? ''
      const source = `${dir}/${slug}-line-${line}.ts`
      const built = `${dir}/${slug}-line-${line}.cjs`
      writeFileSync(source, `${code}export {}\n`)
      writeFileSync(built, nestBuild(code, source))
      return { document, line, code, source, built }
    })
}

/**
 * What `nest build` makes of a file with the tsconfig `nest new` writes: CommonJS, legacy
 * decorators with design metadata. Top-level await, for one, does not survive it.
 */
function nestBuild(code: string, fileName: string): string {
  return ts.transpileModule(code, {
    fileName,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2023,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
    },
  }).outputText
}

/** Starts a built block with node, as `node dist/main.js`, sluice's packages from source. */
function start(block: Block, probe?: string) {
  const env = { ...process.env, REDIS_URL: `redis://127.0.0.1:${redisPort}` }
  return run(
    process.execPath,
    [
      '--conditions=@sluice/source',
      '--import',
      'tsx',
      'test/run-block.cjs',
      block.built,
      ...(probe === undefined ? [] : [probe]),
    ],
    env,
  )
}

const readme = blocksOf('packages/nestjs/README.md')
const migrating = blocksOf('docs/migrating.md', '## From @nestjs/throttler')

describe('the README block', () => {
  it('is the one block of the README, marked for this test', () => {
    expect(readme.map((block) => block.line)).toHaveLength(1)
    const text = readFileSync(`${root}packages/nestjs/README.md`, 'utf8')
    expect(text).toMatch(/<!-- not run: [^>]*packages\/nestjs\/test\/docs\.test\.ts[^>]*-->\n```ts/)
  })

  it("starts as Nest's build leaves it, and limits on Express and on Fastify", async () => {
    const result = await start(readme[0]!, './test/readme-probe.cjs')
    expect(result.code, result.output).toBe(0)
    const answers = JSON.parse(/^RESULT (.*)$/m.exec(result.stdout)?.[1] ?? 'null')
    const expected = {
      hello: {
        status: 200,
        body: 'hello',
        policy: '"100-per-1m";q=100;w=60',
        ratelimit: '"100-per-1m";r=99',
        retryAfter: null,
      },
      // Trusting one proxy, each client behind it has a budget of its own.
      otherClient: '"100-per-1m";r=99',
      logins: [201, 201, 201, 201, 201, 429, 429, 429],
      // Three refusals block the key for an hour.
      lastLogin: '3600',
      report: '{"rows":[]}',
      health: { status: 200, body: 'ok', policy: null, ratelimit: null, retryAfter: null },
    }
    expect(answers).toEqual({ express: expected, fastify: expected })
  }, 120_000)
})

describe.each(migrating)('docs/migrating.md, @nestjs/throttler: block at line $line', (block) => {
  const usesRedis = block.code.includes('@sluice/redis')
  it.skipIf(usesRedis && redisPort === null)(
    "runs to its end as Nest's build leaves it",
    async () => {
      const result = await start(block)
      expect(result.code, result.output).toBe(0)
    },
    120_000,
  )
})

describe('every Nest block', () => {
  it('type-checks against the packages as they are', async () => {
    expect(migrating.length).toBeGreaterThanOrEqual(2)
    // tsc itself, over the blocks and the sources they import.
    const tsc = `${root}node_modules/typescript/bin/tsc`
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.blocks.json'])
    expect(result.code, result.output).toBe(0)
  }, 120_000)
})
