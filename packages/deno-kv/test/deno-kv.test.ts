import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { bundle } from '../../hono/test/runtimes/bundle'
import { binaries, execute, parse, report } from '../../hono/test/runtimes/node-side'

const here = fileURLToPath(new URL('.', import.meta.url))
// Deno KV is still behind a flag in Deno 2.9.
const DENO = ['run', '--unstable-kv', '--allow-read', '--allow-write', '--allow-env']

// The store contract and the model-based store test every sluice store passes, inside Deno
// on Deno KV (its tests run in Deno through the same vitest shim as the Hono scenarios).
const contract = await bundle(join(here, 'deno/contract.ts'))
try {
  const { exitCode, stdout, stderr } = await execute(binaries.deno, [...DENO, contract.file])
  report(
    'denoKvStore inside Deno',
    { ...parse(stdout), exitCode, output: `${stdout}${stderr}` },
    20,
  )
} finally {
  contract.remove()
}

describe('denoKvStore across processes (one KV file)', () => {
  it('three processes racing on one key admit exactly the limit, and hold exactly the slots', async () => {
    const race = await bundle(join(here, 'deno/race.ts'))
    const dir = mkdtempSync(join(tmpdir(), 'sluice-kv-'))
    try {
      const key = `client-${Date.now()}`
      const runs = await Promise.all(
        [0, 1, 2].map(() =>
          execute(binaries.deno, [...DENO, race.file, join(dir, 'kv.db'), key, '15']),
        ),
      )
      const counts = runs.map(({ exitCode, stdout, stderr }) => {
        expect(exitCode, stderr).toBe(0)
        return JSON.parse(stdout) as { admitted: number; slots: number; daily: number }
      })
      // 45 requests for a sliding window of 25: 25 pass, in whichever process.
      expect(counts.reduce((sum, c) => sum + c.admitted, 0)).toBe(25)
      expect(counts.reduce((sum, c) => sum + c.slots, 0)).toBe(3)
      // The daily bucket took from the same 25 (one atomic commit with the window), no more.
      expect(Math.min(...counts.map((c) => c.daily))).toBe(1000 - 25)
    } finally {
      race.remove()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a rolling deploy (old and new spec of one name) resets no key and admits no more than the larger limit', async () => {
    const rolling = await bundle(join(here, 'deno/rolling.ts'))
    const dir = mkdtempSync(join(tmpdir(), 'sluice-kv-'))
    const take = async (key: string, limit: number, count: number) => {
      const { exitCode, stdout, stderr } = await execute(binaries.deno, [
        ...DENO,
        rolling.file,
        join(dir, 'kv.db'),
        key,
        String(limit),
        String(count),
      ])
      expect(exitCode, stderr).toBe(0)
      return (JSON.parse(stdout) as { admitted: number }).admitted
    }
    try {
      // One after the other: the old spec (10 an hour) spends the window, the new one (25)
      // finds it spent (10 of 10 is 25 of 25), and so does the old one again.
      const flipped = `flipped-${Date.now()}`
      expect(await take(flipped, 10, 12)).toBe(10)
      expect(await take(flipped, 25, 30)).toBe(0)
      expect(await take(flipped, 10, 5)).toBe(0)
      // At once, racing on one key: never the two budgets (35), never above 25.
      const raced = `raced-${Date.now()}`
      const [old, next] = await Promise.all([take(raced, 10, 30), take(raced, 25, 30)])
      expect(old! + next!).toBeGreaterThanOrEqual(10)
      expect(old! + next!).toBeLessThanOrEqual(25)
    } finally {
      rolling.remove()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
