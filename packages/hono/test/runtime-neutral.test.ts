import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'
import { describe, expect, it } from 'vitest'

const here = fileURLToPath(new URL('.', import.meta.url))

/**
 * The Node built-ins (`node:*` or a bare built-in name) among everything `entry` imports
 * at run time, bundled for no runtime in particular: how (`import` or `import()`), what,
 * and from where. Type-only imports are erased, so `@sluice/http/node`'s `import type` of
 * `node:http` does not count.
 */
async function nodeImports(entry: string): Promise<string[]> {
  const found: string[] = []
  const builtins = new Set([
    'assert',
    'async_hooks',
    'buffer',
    'child_process',
    'crypto',
    'diagnostics_channel',
    'events',
    'fs',
    'http',
    'https',
    'net',
    'os',
    'path',
    'perf_hooks',
    'process',
    'stream',
    'timers',
    'tls',
    'url',
    'util',
    'worker_threads',
    'zlib',
  ])
  const record: Plugin = {
    name: 'sluice:node-imports',
    setup(builder) {
      builder.onResolve({ filter: /.*/ }, (args) => {
        const bare = args.path.replace(/^node:/, '').split('/')[0]!
        if (args.path.startsWith('node:') || builtins.has(bare)) {
          const from = args.importer.replace(/.*\/(packages|node_modules)\//, '')
          found.push(
            `${args.kind === 'dynamic-import' ? 'import()' : 'import'} ${args.path} (${from})`,
          )
          return { path: args.path, external: true }
        }
        return undefined
      })
    },
  }
  await build({
    stdin: { contents: `export * from '${entry}'`, resolveDir: here, loader: 'ts' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['@sluice/source', 'import'],
    plugins: [record],
    logLevel: 'silent',
  })
  return found
}

// DESIGN §7: core and http import nothing Node-only outside a Node-specific module, so
// the Hono adapter loads on Bun, Deno and Workers (where the scenarios then run).
describe('runtime-neutral packages', () => {
  it('@sluice/core imports nothing of Node', async () => {
    expect(await nodeImports('@sluice/core')).toEqual([])
  })

  it.each(['@sluice/http', '@sluice/http/adapter', '@sluice/http/fetch', '@sluice/hono'])(
    '%s imports nothing of Node',
    async (entry) => {
      expect(await nodeImports(entry)).toEqual([])
    },
  )

  it("@sluice/http/testing: the scenarios drive a real server with Node's HTTP client", async () => {
    // Bun and Deno implement these; workerd runs the scenarios on a fetch-based node:http.
    expect(await nodeImports('@sluice/http/testing')).toEqual(
      expect.arrayContaining([
        'import node:http (http/src/testing/scenarios.ts)',
        'import node:net (http/src/testing/scenarios.ts)',
        'import node:diagnostics_channel (http/src/testing/scenarios.ts)',
      ]),
    )
  })
})
