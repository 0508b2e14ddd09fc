import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

// Real PM2 cluster mode: its own daemon (a PM2_HOME of this test's), four instances of
// test/fixtures/pm2-app.ts, each calling clusterStore() with no transport options.
const root = fileURLToPath(new URL('..', import.meta.url))
const pm2Bin = join(root, 'node_modules', '.bin', 'pm2')
const home = mkdtempSync(join(tmpdir(), 'sluice-pm2-'))
const out = mkdtempSync(join(tmpdir(), 'sluice-pm2-out-'))
const app = `sluicepm2${process.pid}`
const pm2 = (...args: string[]) =>
  promisify(execFile)(pm2Bin, args, {
    cwd: root,
    env: { ...process.env, PM2_HOME: home, OUT: out },
    timeout: 120_000,
  })

afterAll(async () => {
  await pm2('kill').catch(() => {})
  rmSync(home, { recursive: true, force: true })
  rmSync(out, { recursive: true, force: true })
  // Instance 0 stopped by PM2 leaves its socket file behind (the next host would remove it).
  rmSync(join(tmpdir(), `sluice-${app}-sluice.sock`), { force: true })
})

describe('clusterStore under PM2 cluster mode', () => {
  it('instance 0 hosts; four instances hammering one key admit exactly the limit', async () => {
    await pm2(
      'start',
      'test/fixtures/pm2-entry.mjs',
      '-i',
      '4',
      '--name',
      app,
      '--node-args=--conditions=@sluice/source --import tsx',
    )
    const files = [0, 1, 2, 3].map((instance) => join(out, `${instance}.json`))
    await expect
      .poll(() => files.every((file) => existsSync(file)), { timeout: 90_000, interval: 500 })
      .toBe(true)
    const reports = files.map(
      (file) =>
        JSON.parse(readFileSync(file, 'utf8')) as {
          admitted: number
          attempts: number
          role: string
          status: string
        },
    )
    expect(reports.map((r) => r.role)).toEqual(['host', 'worker', 'worker', 'worker'])
    expect(reports.map((r) => r.attempts)).toEqual([600, 600, 600, 600])
    expect(reports.map((r) => r.status)).toEqual(['up', 'up', 'up', 'up'])
    // 2,400 attempts at a limit of 1,000, on one budget.
    expect(reports.reduce((sum, r) => sum + r.admitted, 0)).toBe(1000)
  }, 150_000)
})
