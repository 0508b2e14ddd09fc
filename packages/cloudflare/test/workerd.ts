import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { Miniflare, type WorkerOptions } from 'miniflare'

const here = dirname(fileURLToPath(import.meta.url))

/** Flags the Workers run with: Node's APIs (diagnostics_channel) as real Workers use them. */
export const COMPATIBILITY = {
  compatibilityDate: '2025-09-01',
  compatibilityFlags: ['nodejs_compat'],
}

/** Bundles a test Worker (TypeScript, workspace packages from source) into one module. */
export async function bundleWorker(entry: string): Promise<{ file: string; remove(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-worker-'))
  const file = join(dir, 'worker.mjs')
  await build({
    entryPoints: [join(here, 'workers', entry)],
    outfile: file,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    conditions: ['@sluice/source', 'workerd', 'worker', 'import'],
    external: ['node:*'],
    logLevel: 'error',
  })
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A module Worker option set from a bundle. */
export function worker(
  name: string,
  bundle: { file: string },
  options: Partial<WorkerOptions> = {},
): WorkerOptions {
  return {
    name,
    modules: true,
    scriptPath: bundle.file,
    modulesRoot: dirname(bundle.file),
    ...COMPATIBILITY,
    ...options,
  } as WorkerOptions
}

/**
 * Starts workerd (through miniflare) with the objects' Worker and, optionally, more
 * Workers bound to its objects as `SLUICE`.
 */
export async function startObjects(more: WorkerOptions[] = []) {
  const objects = await bundleWorker('objects.ts')
  const mf = new Miniflare({
    workers: [
      worker('objects', objects, {
        durableObjects: {
          SLUICE: { className: 'SluiceDurableObject', useSQLite: true },
          MANUAL: { className: 'ManualClockObject', useSQLite: true },
        },
      }),
      ...more,
    ],
  })
  await mf.ready
  return {
    mf,
    namespace: await mf.getDurableObjectNamespace('SLUICE', 'objects'),
    /** Objects of the twin class on the ManualClock that `advance` moves. */
    manual: await mf.getDurableObjectNamespace('MANUAL', 'objects'),
    async advance(ms: number) {
      await (await mf.dispatchFetch(`http://objects/advance?ms=${ms}`)).text()
    },
    /** The time of the objects' ManualClock. */
    async now(): Promise<number> {
      return Number(await (await mf.dispatchFetch('http://objects/advance?ms=0')).text())
    },
    async dispose() {
      await mf.dispose()
      objects.remove()
    },
  }
}
