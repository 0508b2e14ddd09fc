import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** What the numbers were measured on. */
export interface Machine {
  readonly cpu: string
  readonly cores: number
  readonly memoryGiB: number
  readonly os: string
  readonly node: string
  readonly v8: string
  /** 1-minute load average when the run started: a hint of how noisy it was. */
  readonly loadAverage: number
}

function osName(): string {
  try {
    const release = readFileSync('/etc/os-release', 'utf8')
    const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(release)?.[1]
    if (pretty !== undefined) return `${pretty}, ${os.type()} ${os.release()} ${os.arch()}`
  } catch {
    // Not Linux, or no os-release: the kernel line below is still true.
  }
  return `${os.type()} ${os.release()} ${os.arch()}`
}

/**
 * The machine this process runs on.
 *
 * @example
 * ```ts
 * describeMachine().cores // 2
 * ```
 */
export function describeMachine(): Machine {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: os.totalmem() / 2 ** 30,
    os: osName(),
    node: process.version,
    v8: process.versions.v8,
    loadAverage: os.loadavg()[0] ?? 0,
  }
}

const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Reads `pkg`'s package.json as installed for `from` (a directory), by walking node_modules up. */
function installedVersion(pkg: string, from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'node_modules', pkg, 'package.json')
    if (existsSync(manifest)) {
      return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version
    }
    if (dirname(dir) === dir) return undefined
  }
}

/** Every package whose code a number in RESULTS.md comes from, with the version installed. */
export function measuredVersions(): { name: string; version: string; role: string }[] {
  const http = join(BENCH_DIR, '..', 'packages', 'http')
  const entries: [string, string, string][] = [
    ['@sluice/core', BENCH_DIR, 'measured'],
    ['@sluice/http', BENCH_DIR, 'measured'],
    ['@sluice/express', BENCH_DIR, 'measured'],
    ['@sluice/koa', BENCH_DIR, 'measured'],
    ['@sluice/hono', BENCH_DIR, 'measured'],
    ['@sluice/fastify', BENCH_DIR, 'measured'],
    ['ipaddr.js', http, 'dependency of @sluice/http'],
    ['express-rate-limit', BENCH_DIR, 'peer'],
    ['rate-limiter-flexible', BENCH_DIR, 'peer'],
    ['hono-rate-limiter', BENCH_DIR, 'peer'],
    ['koa-ratelimit', BENCH_DIR, 'peer'],
    ['limiter', BENCH_DIR, 'peer'],
    ['@fastify/rate-limit', BENCH_DIR, 'peer'],
    ['express', BENCH_DIR, 'framework'],
    ['koa', BENCH_DIR, 'framework'],
    ['hono', BENCH_DIR, 'framework'],
    ['@hono/node-server', BENCH_DIR, 'framework'],
    ['fastify', BENCH_DIR, 'framework'],
    ['mitata', BENCH_DIR, 'harness'],
    ['autocannon', BENCH_DIR, 'harness'],
    ['@sinonjs/fake-timers', BENCH_DIR, 'harness'],
    ['tsx', BENCH_DIR, 'harness'],
  ]
  return entries.map(([name, from, role]) => ({
    name,
    version: installedVersion(name, from) ?? 'not installed',
    role,
  }))
}

/**
 * The sluice commit measured, marked `+ uncommitted changes` when the work tree differs
 * from it (the packages are measured from their source, as checked out).
 */
export function sluiceRevision(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, {
        cwd: BENCH_DIR,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim()
    const head = git('rev-parse', '--short', 'HEAD')
    const dirty = git('status', '--porcelain', '--', '../packages').length > 0
    return dirty ? `${head} + uncommitted changes in packages/` : head
  } catch {
    return 'unknown (not a git checkout)'
  }
}
