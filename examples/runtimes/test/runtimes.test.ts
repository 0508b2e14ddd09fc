import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { Miniflare } from 'miniflare'
import { afterAll, describe, expect, it } from 'vitest'

const require = createRequire(import.meta.url)
const root = fileURLToPath(new URL('..', import.meta.url))
const binaries = {
  bun: join(dirname(require.resolve('bun/package.json')), 'bin', 'bun.exe'),
  deno: join(dirname(require.resolve('deno/package.json')), 'deno'),
}

/** Starts a server the way `pnpm bun` / `pnpm deno` do, on a free port; resolves with its URL. */
function serve(command: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const url = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const port = /listening on http:\/\/[^:]+:(\d+)/.exec(output)?.[1]
      if (port !== undefined) resolve(`http://127.0.0.1:${port}`)
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('exit', (code) => reject(new Error(`exited with ${code}:\n${output}`)))
  })
  return { url, stop: () => child.kill() }
}

/** Six requests from one client: five pass, the sixth is refused with Retry-After. */
async function fiveThenRefused(base: string, runtime: string, bulkhead = true): Promise<void> {
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${base}/`)
    statuses.push(res.status)
    expect(await res.json()).toEqual({ runtime, key: '127.0.0.1', left: 4 - i })
  }
  const refused = await fetch(`${base}/`)
  expect([...statuses, refused.status]).toEqual([200, 200, 200, 200, 200, 429])
  expect(refused.headers.get('ratelimit-policy')).toBe('"5-per-1m";q=5;w=60')
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
  if (!bulkhead) return
  // The app-wide limit comes first; the report's bulkhead only sees admitted requests.
  expect((await fetch(`${base}/report`)).status).toBe(429)
}

describe('examples/runtimes (smoke)', () => {
  const running: { stop(): void }[] = []
  afterAll(() => {
    for (const server of running) server.stop()
  })

  it('src/bun/server.ts: the client address from Bun.serve', async () => {
    const server = serve(binaries.bun, ['--conditions=@sluice/source', 'src/bun/server.ts'])
    running.push(server)
    await fiveThenRefused(await server.url, 'bun')
  })

  it('src/deno/server.ts: the client address from Deno.serve', async () => {
    const server = serve(binaries.deno, [
      'run',
      '--allow-net',
      '--allow-env',
      '--conditions=@sluice/source',
      '--unstable-sloppy-imports',
      'src/deno/server.ts',
    ])
    running.push(server)
    await fiveThenRefused(await server.url, 'deno')
  })

  it('src/deno/kv-server.ts: the budget in Deno KV', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-kv-'))
    const server = serve(
      binaries.deno,
      [
        'run',
        '--allow-net',
        '--allow-env',
        '--allow-read',
        '--allow-write',
        '--unstable-kv',
        '--conditions=@sluice/source',
        '--unstable-sloppy-imports',
        'src/deno/kv-server.ts',
      ],
      { KV_PATH: join(dir, 'kv.db') },
    )
    running.push({
      stop() {
        server.stop()
        rmSync(dir, { recursive: true, force: true })
      },
    })
    await fiveThenRefused(await server.url, 'deno', false)
  })

  it('src/cloudflare/worker.ts: cf-connecting-ip, budgets in Durable Objects, as wrangler.jsonc says', async () => {
    // wrangler.jsonc is the deployment's truth: the test reads its bindings and flags.
    const config = JSON.parse(
      readFileSync(join(root, 'wrangler.jsonc'), 'utf8').replace(/^\s*\/\/.*$/gm, ''),
    ) as {
      main: string
      compatibility_date: string
      compatibility_flags: string[]
      durable_objects: { bindings: { name: string; class_name: string }[] }
      migrations: { new_sqlite_classes?: string[] }[]
    }
    const dir = mkdtempSync(join(tmpdir(), 'sluice-example-'))
    // Bundled as wrangler does (esbuild, the workerd conditions), workspace packages from source.
    await build({
      entryPoints: [join(root, config.main)],
      outfile: join(dir, 'worker.mjs'),
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      conditions: ['@sluice/source', 'workerd', 'worker', 'import'],
      external: ['node:*', 'cloudflare:*'],
      logLevel: 'error',
    })
    const sqlite = new Set(config.migrations.flatMap((m) => m.new_sqlite_classes ?? []))
    const mf = new Miniflare({
      modules: true,
      scriptPath: join(dir, 'worker.mjs'),
      modulesRoot: dir,
      compatibilityDate: config.compatibility_date,
      compatibilityFlags: config.compatibility_flags,
      durableObjects: Object.fromEntries(
        config.durable_objects.bindings.map((b) => [
          b.name,
          { className: b.class_name, useSQLite: sqlite.has(b.class_name) },
        ]),
      ),
      port: 0,
    })
    try {
      const url = await mf.ready
      await fiveThenRefused(url.origin, 'workerd')
    } finally {
      await mf.dispose()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
