/**
 * What an adopter gets from npm, checked end to end: every published package is packed
 * from a clean copy of the repository with no dist/ in it (so `prepack` must build it),
 * the tarballs are installed with npm into a project outside the workspace, and the
 * README's quick starts run against them as ESM and as CommonJS, on this Node.js and on
 * the oldest Node.js the packages' `engines` admit (its binary comes from the npm
 * registry's `node-<platform>-<arch>` package).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const fixtures = fileURLToPath(new URL('../fixtures', import.meta.url))

/**
 * The environment for the package managers we start: ours without the `npm_*` variables
 * pnpm sets for the test run, which would otherwise configure npm in the scratch project.
 */
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)),
)

/** Runs a command to its end: exit code and everything it wrote. */
function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  return new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      file,
      args,
      {
        cwd,
        env: { ...cleanEnv, CI: 'true', ...env },
        timeout: 300_000,
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
        resolve({ code, output: `${stdout}${stderr}` })
      },
    )
  })
}

/** Fails with the command's output unless it exited 0 (its output is never parsed). */
async function mustRun(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const result = await run(file, args, cwd, env)
  if (result.code !== 0) {
    throw new Error(`${file} ${args.join(' ')} exited ${result.code} in ${cwd}:\n${result.output}`)
  }
}

interface Published {
  dir: string
  name: string
  manifest: Record<string, unknown> & { engines: { node: string } }
}

/** The packages that are published: every packages/* that is not private. */
const published: Published[] = readdirSync(join(root, 'packages'))
  .map((dir) => ({ dir, file: join(root, 'packages', dir, 'package.json') }))
  .filter(({ file }) => existsSync(file))
  .map(({ dir, file }) => {
    const manifest = JSON.parse(readFileSync(file, 'utf8'))
    return { dir, name: manifest.name as string, manifest }
  })
  .filter(({ manifest }) => manifest.private !== true)

/** Where `pnpm pack` puts a package's tarball, named as npm names it. */
function tarballFile(name: string): string {
  return `${name.replace('@', '').replace('/', '-')}-0.1.0.tgz`
}

/** The oldest Node.js the packages admit: `engines.node` is `>=X.Y.Z`, the same in each. */
const minimumNode = /^>=(\d+\.\d+\.\d+)$/.exec(published[0]?.manifest.engines.node ?? '')?.[1]

/** Third-party packages the quick starts import, at the ranges the workspace tests with. */
const readmeDeps = (
  JSON.parse(readFileSync(join(root, 'examples/readme/package.json'), 'utf8')) as {
    dependencies: Record<string, string>
  }
).dependencies
const thirdParty = ['express', 'koa', '@koa/router', 'hono', '@hono/node-server'].map(
  (name) => `${name}@${readmeDeps[name]}`,
)

/**
 * The official Node.js binary of `version`, from the npm registry's
 * `node-<platform>-<arch>` package (it carries it as bin/node), cached across runs.
 */
async function nodeBinary(version: string): Promise<string> {
  const cache = join(tmpdir(), 'sluice-node-binaries')
  const target = join(cache, `node-v${version}-${process.platform}-${process.arch}`)
  const node = join(target, 'package', 'bin', 'node')
  if (existsSync(node)) return node
  mkdirSync(cache, { recursive: true })
  const download = mkdtempSync(join(cache, 'download-'))
  const spec = `node-${process.platform}-${process.arch}@${version}`
  await mustRun('npm', ['pack', spec, '--pack-destination', download], download)
  const tarball = readdirSync(download).find((file) => file.endsWith('.tgz'))
  if (tarball === undefined) throw new Error(`npm pack ${spec} left no tarball`)
  await mustRun('tar', ['-xzf', tarball, 'package/bin/node'], download)
  rmSync(join(download, tarball))
  try {
    renameSync(download, target)
  } catch {
    // Another run put it there first.
    rmSync(download, { recursive: true, force: true })
  }
  return node
}

// ---------------------------------------------------------------------------------------
// The quick starts, as the README shows them.

const readme = readFileSync(join(root, 'README.md'), 'utf8')

/** The first fenced block of `language` after `heading` (that starts with `start`). */
function blockAfter(heading: string, language: string, start = ''): string {
  const at = readme.indexOf(heading)
  if (at === -1) throw new Error(`README.md has no "${heading}"`)
  const fence = new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm')
  for (const match of readme.slice(at).matchAll(fence)) {
    if (match[1]?.startsWith(start)) return match[1]
  }
  throw new Error(`README.md has no ${language} block starting "${start}" after "${heading}"`)
}

/** The CommonJS spelling of an ESM program's imports. */
function toCommonJs(esm: string): string {
  return esm
    .replace(/^import (\w+) from '([^']+)'$/gm, "const $1 = require('$2')")
    .replace(/^import \{ ([^}]+) \} from '([^']+)'$/gm, "const { $1 } = require('$2')")
}

interface QuickStart {
  name: string
  esm: string
  cjs: string
  path: string
  /** Requests the tightest policy admits in a window. */
  admitted: number
  policy: string
  first: RegExp
}

const expressEsm = blockAfter('## Quick start', 'ts')
const koaEsm = blockAfter(
  '## Express, Koa, Hono and Fastify',
  'ts',
  "import Router from '@koa/router'",
)
const honoEsm = blockAfter(
  '## Express, Koa, Hono and Fastify',
  'ts',
  "import { serve } from '@hono/node-server'",
)
const quickStarts: QuickStart[] = [
  {
    name: 'express',
    esm: expressEsm,
    cjs: blockAfter('## Quick start', 'js'),
    path: '/',
    admitted: 100,
    policy: '"100-per-1m";q=100;w=60',
    first: /^"100-per-1m";r=99;t=\d+$/,
  },
  {
    name: 'koa',
    esm: koaEsm,
    cjs: toCommonJs(koaEsm),
    path: '/search',
    admitted: 10,
    policy: '"100-per-1m";q=100;w=60, "search";q=10;w=60',
    first: /^"100-per-1m";r=99;t=\d+, "search";r=9;t=\d+$/,
  },
  {
    name: 'hono',
    esm: honoEsm,
    cjs: toCommonJs(honoEsm),
    path: '/search',
    admitted: 10,
    policy: '"100-per-1m";q=100;w=60, "search";q=10;w=60',
    first: /^"100-per-1m";r=99;t=\d+, "search";r=9;t=\d+$/,
  },
]

/** Starts a program, waits for its server, and stops it when done. */
async function withServer(
  node: string,
  program: string,
  cwd: string,
  check: (base: string) => Promise<void>,
) {
  const child: ChildProcess = spawn(
    node,
    ['--require', join(fixtures, 'listen-on-free-port.cjs'), program],
    { cwd, env: cleanEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk
        const match = /listening on (\d+)/.exec(output)
        if (match) resolve(Number(match[1]))
      })
      child.stderr?.on('data', (chunk: Buffer) => {
        output += chunk
      })
      exited.then((code) =>
        reject(new Error(`${program} exited ${code} before listening:\n${output}`)),
      )
    })
    await check(`http://127.0.0.1:${port}`)
    expect(child.exitCode, `${program} died:\n${output}`).toBeNull()
  } finally {
    child.kill()
    await exited
  }
}

/** Sends the quick start's requests: all admitted but the last, with the headers it promises. */
async function checkQuickStart(quickStart: QuickStart, base: string) {
  const url = `${base}${quickStart.path}`
  const first = await fetch(url)
  expect(first.status).toBe(200)
  expect(first.headers.get('ratelimit-policy')).toBe(quickStart.policy)
  expect(first.headers.get('ratelimit')).toMatch(quickStart.first)
  expect(await first.json()).toEqual({ remaining: quickStart.admitted - 1 })
  for (let i = 1; i < quickStart.admitted; i++) {
    const admitted = await fetch(url)
    await admitted.arrayBuffer()
    expect(admitted.status, `request ${i + 1}`).toBe(200)
  }
  const refused = await fetch(url)
  expect(refused.status).toBe(429)
  expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
  expect(refused.headers.get('ratelimit-policy')).toBe(quickStart.policy)
  expect(await refused.text()).toBe('Too Many Requests')
}

// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// The OpenTelemetry install lines, as the READMEs give them.

/**
 * The newest Node.js 22. There npm may pick OpenTelemetry's 3.x SDK (Node.js 22.15 and
 * `@opentelemetry/api` 1.10 or later); on Node.js 20 it picks 2.x, which refuses api 1.10.
 */
const NODE_22 = '22.23.5'

/**
 * The `npm` commands of the first shell block of `document` that installs `@sluice/otel`:
 * its lines that name `@sluice/otel` or an `@opentelemetry/` package, comments dropped.
 */
function otelInstallLines(document: string): string[][] {
  const text = readFileSync(join(root, document), 'utf8')
  for (const [, block = ''] of text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    if (!block.includes('@sluice/otel')) continue
    return block
      .split('\n')
      .map((line) => line.replace(/#.*$/, '').trim())
      .filter((line) => /@sluice\/otel|@opentelemetry\//.test(line))
      .map((line) => line.split(/\s+/))
  }
  throw new Error(`${document} has no shell block that installs @sluice/otel`)
}

const otelInstalls = ['packages/otel/README.md', 'README.md'].flatMap((document) =>
  [minimumNode ?? '', NODE_22].map((version): [string, string, string[][]] => [
    document,
    version,
    otelInstallLines(document),
  ]),
)

/** The sluice packages `name` depends on, directly or not: npm would get them from the registry. */
function sluiceDependencies(name: string, found = new Set<string>()): Set<string> {
  const manifest = published.find((p) => p.name === name)?.manifest
  for (const dependency of Object.keys((manifest?.dependencies ?? {}) as object)) {
    if (dependency.startsWith('@sluice/') && !found.has(dependency)) {
      found.add(dependency)
      sluiceDependencies(dependency, found)
    }
  }
  return found
}

/** Records a metric through what the install lines installed (see the fixture). */
const OTEL_METRICS = 'records-otel-metrics.mjs'

/** The program that exercises the newest APIs the packages use (see the fixture). */
const NEWEST_APIS = 'uses-the-newest-apis.cjs'

const work = mkdtempSync(join(tmpdir(), 'sluice-packaging-'))
const copy = join(work, 'repo')
const tarballs = join(work, 'tarballs')
const app = join(work, 'app')

// Generous: the scratch copy holds two installs (tens of thousands of files), which took
// over 30 s to remove on a machine busy with the other suites.
afterAll(() => {
  rmSync(work, { recursive: true, force: true })
}, 300_000)

beforeAll(async () => {
  // A clean checkout of the working tree: tracked and new files, nothing git ignores
  // (no node_modules, no dist).
  const listed = await run(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    root,
  )
  if (listed.code !== 0) throw new Error(`git ls-files failed:\n${listed.output}`)
  for (const file of listed.output.split('\0')) {
    if (file === '' || !existsSync(join(root, file))) continue
    mkdirSync(dirname(join(copy, file)), { recursive: true })
    copyFileSync(join(root, file), join(copy, file))
  }
  await mustRun('pnpm', ['install', '--frozen-lockfile', '--prefer-offline'], copy)

  mkdirSync(tarballs)
  for (const { dir } of published) {
    if (existsSync(join(copy, 'packages', dir, 'dist'))) throw new Error(`${dir}/dist was copied`)
    await mustRun('pnpm', ['pack', '--pack-destination', tarballs], join(copy, 'packages', dir))
  }

  mkdirSync(app)
  writeFileSync(join(app, 'package.json'), '{ "name": "sluice-adopter", "private": true }\n')
  const packed = readdirSync(tarballs).map((file) => join(tarballs, file))
  await mustRun('npm', ['install', '--no-audit', '--no-fund', ...packed, ...thirdParty], app)
  for (const quickStart of quickStarts) {
    writeFileSync(join(app, `${quickStart.name}.mjs`), quickStart.esm)
    writeFileSync(join(app, `${quickStart.name}.cjs`), quickStart.cjs)
  }
  // Copied in, so its require() finds the installed tarballs, not the workspace's packages.
  copyFileSync(join(fixtures, NEWEST_APIS), join(app, NEWEST_APIS))
}, 900_000)

// Generous: the machine may be busy with the other suites; nothing here asserts a duration.
describe('the packed packages', { timeout: 180_000 }, () => {
  it('are built by prepack: dist, types, licence and readme in every tarball, no tests', async () => {
    const files = readdirSync(tarballs).sort()
    expect(files).toEqual(published.map(({ name }) => tarballFile(name)).sort())
    for (const file of files) {
      const listed = await run('tar', ['-tzf', join(tarballs, file)], tarballs)
      expect(listed.code).toBe(0)
      const entries = listed.output.split('\n').filter((entry) => entry !== '')
      expect(entries, file).toEqual(
        expect.arrayContaining([
          'package/LICENSE',
          'package/README.md',
          'package/package.json',
          'package/dist/index.mjs',
          'package/dist/index.cjs',
          'package/dist/index.d.mts',
          'package/dist/index.d.cts',
        ]),
      )
      expect(
        entries.filter((entry) => /\.test\.ts$|\/test\//.test(entry)),
        file,
      ).toEqual([])
    }
  })

  it('say who made them, where they live and what they need', () => {
    const engines = new Set<string>()
    for (const { dir, name } of published) {
      const manifest = JSON.parse(
        readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8'),
      )
      expect(manifest.license).toBe('MIT')
      expect(manifest.author).toBe('the sluice authors')
      expect(manifest.repository).toEqual({
        type: 'git',
        url: 'git+https://github.com/sluice-js/sluice.git',
        directory: `packages/${dir}`,
      })
      expect(manifest.homepage).toBe(
        `https://github.com/sluice-js/sluice/tree/main/packages/${dir}#readme`,
      )
      expect(manifest.bugs).toEqual({ url: 'https://github.com/sluice-js/sluice/issues' })
      expect(manifest.keywords.length).toBeGreaterThan(2)
      expect(JSON.stringify(manifest.dependencies ?? {})).not.toContain('workspace:')
      expect(readFileSync(join(app, 'node_modules', name, 'LICENSE'), 'utf8')).toContain(
        'Copyright (c) 2026 the sluice authors',
      )
      engines.add(manifest.engines.node)
    }
    expect([...engines]).toEqual([`>=${minimumNode}`])
  })

  it('use no JavaScript or Node.js API newer than their engines admit', () => {
    // When each API arrived in Node.js (its changelog, or the V8 version it ships).
    const apis: [RegExp, string][] = [
      [/\bAbortSignal\.any\b/, '20.3.0'],
      [/\bSymbol\.(?:asyncD|d)ispose\b/, '20.4.0'],
      [/\baddAbortListener\b/, '20.5.0'],
      [/\bimport\.meta\.(?:dirname|filename)\b/, '20.11.0'],
      [/\bstyleText\b|\bloadEnvFile\b/, '20.12.0'],
      [/\bgetBuiltinModule\b/, '20.16.0'],
      [/\b(?:Object|Map)\.groupBy\b/, '21.0.0'],
      [/\bnavigator\.|\.transferToFixedLength\(/, '21.0.0'],
      [/\bPromise\.withResolvers\b|\bArray\.fromAsync\b|\bIterator\.from\b/, '22.0.0'],
      [
        /\.(?:union|intersection|symmetricDifference|isSubsetOf|isSupersetOf|isDisjointFrom)\(/,
        '22.0.0',
      ],
      [/\bURL\.parse\(/, '22.1.0'],
      [/\bnew WebSocket\(/, '22.4.0'],
      [/\bgetCallSites?\(/, '22.9.0'],
      [/\bPromise\.try\b/, '22.10.0'],
      [/\bRegExp\.escape\b|\bFloat16Array\b|\bError\.isError\b/, '24.0.0'],
      // A `using` declaration the build did not lower: Node.js 24.
      [/^\s*(?:await\s+)?using\s+[\w$]+\s*=/m, '24.0.0'],
    ]
    const newer = (version: string) => {
      const [a, b, c] = version.split('.').map(Number)
      const [x, y, z] = (minimumNode ?? '').split('.').map(Number)
      return a! - x! || b! - y! || c! - z!
    }
    const found: string[] = []
    for (const { name } of published) {
      const dist = join(app, 'node_modules', name, 'dist')
      for (const file of readdirSync(dist).filter((f) => /\.[cm]?js$/.test(f))) {
        const code = readFileSync(join(dist, file), 'utf8')
        for (const [pattern, since] of apis) {
          if (pattern.test(code) && newer(since) > 0)
            found.push(`${name}/dist/${file}: ${pattern} (Node.js ${since})`)
        }
      }
    }
    expect(found).toEqual([])
  })

  describe.each(quickStarts)('the $name quick start', (quickStart) => {
    it.each(['mjs', 'cjs'])('runs as .%s on this Node.js', async (extension) => {
      await withServer(process.execPath, `${quickStart.name}.${extension}`, app, (base) =>
        checkQuickStart(quickStart, base),
      )
    })
  })

  describe.each(otelInstalls)(
    'the OpenTelemetry install lines of %s, on Node.js %s',
    (_document, version, lines) => {
      it('install the packed @sluice/otel with what it needs, and it records metrics', async () => {
        const node = await nodeBinary(version)
        // npm itself, run by that Node.js: npm picks versions by the engines of the Node.js
        // it runs on. Strict engines: a package that does not claim that Node.js fails.
        const npm = join(
          (await run('npm', ['root', '-g'], work)).output.trim(),
          'npm/bin/npm-cli.js',
        )
        const env = {
          npm_config_engine_strict: 'true',
          npm_config_audit: 'false',
          npm_config_fund: 'false',
        }
        const project = mkdtempSync(join(work, 'otel-'))
        writeFileSync(
          join(project, 'package.json'),
          '{ "name": "sluice-otel-adopter", "private": true }\n',
        )
        const registry = [...sluiceDependencies('@sluice/otel')].map((name) =>
          join(tarballs, tarballFile(name)),
        )
        await mustRun(node, [npm, 'install', ...registry], project, env)
        for (const [command, ...args] of lines) {
          expect(command).toBe('npm')
          const packed = args.map((arg) =>
            arg === '@sluice/otel' ? join(tarballs, tarballFile(arg)) : arg,
          )
          await mustRun(node, [npm, ...packed], project, env)
        }
        copyFileSync(join(fixtures, OTEL_METRICS), join(project, OTEL_METRICS))
        const result = await run(node, [OTEL_METRICS], project)
        expect(result, result.output).toEqual({ code: 0, output: 'otel metrics ok\n' })
      }, 600_000)
    },
  )

  describe(`on the oldest Node.js the packages admit (${minimumNode})`, () => {
    let node = ''
    beforeAll(async () => {
      node = await nodeBinary(minimumNode ?? '')
    }, 600_000)

    it('is the binary it says', async () => {
      const version = await run(node, ['--version'], app)
      expect(version).toEqual({ code: 0, output: `v${minimumNode}\n` })
    })

    it('has every API the packages use', async () => {
      const result = await run(node, [NEWEST_APIS], app)
      expect(result, result.output).toEqual({ code: 0, output: 'newest APIs ok\n' })
    })

    describe.each(quickStarts)('the $name quick start', (quickStart) => {
      it.each(['mjs', 'cjs'])('runs as .%s', async (extension) => {
        await withServer(node, `${quickStart.name}.${extension}`, app, (base) =>
          checkQuickStart(quickStart, base),
        )
      })
    })
  })
})
