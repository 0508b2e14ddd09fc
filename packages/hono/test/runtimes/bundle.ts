import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'

const here = fileURLToPath(new URL('.', import.meta.url))

/**
 * Bundles a test entry (relative to this folder, or absolute; TypeScript, workspace
 * packages from source) into one ES module a
 * runtime can load as is: `vitest` becomes the shim, Node built-ins stay imports of the
 * runtime's own, and `replace` swaps further modules (workerd's `node:http` client).
 */
export async function bundle(
  entry: string,
  options: { replace?: Record<string, string>; platform?: 'node' | 'neutral' } = {},
): Promise<{ file: string; remove(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-runtime-'))
  const file = join(dir, 'bundle.mjs')
  const replace: Record<string, string> = {
    vitest: join(here, 'vitest-shim.ts'),
    ...options.replace,
  }
  const swap: Plugin = {
    name: 'sluice:swap',
    setup(builder) {
      const names = Object.keys(replace).map((name) => name.replace(/[/:]/g, '\\$&'))
      builder.onResolve({ filter: new RegExp(`^(${names.join('|')})$`) }, (args) => ({
        path: replace[args.path] as string,
      }))
    },
  }
  await build({
    entryPoints: [resolve(here, entry)],
    outfile: file,
    bundle: true,
    format: 'esm',
    platform: options.platform ?? 'node',
    target: 'es2022',
    conditions: ['@sluice/source', 'workerd', 'worker', 'import'],
    // Built-ins are the runtime's: Bun and Deno implement node:*, workerd with nodejs_compat.
    external: ['node:*'],
    plugins: [swap],
    logLevel: 'error',
    sourcemap: 'inline',
  })
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) }
}
