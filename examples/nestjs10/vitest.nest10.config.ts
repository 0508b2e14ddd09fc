/**
 * The vitest configuration of the NestJS 10 run (see test/nestjs10.test.ts): @sluice/nestjs's
 * own test files, with every NestJS package they or its source import resolved from this
 * package (NestJS 10, Express 4, Fastify 4) instead of from packages/nestjs (NestJS 11).
 */
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import type { Plugin } from 'vite'
import { defineConfig } from 'vitest/config'

const here = fileURLToPath(new URL('.', import.meta.url))
const nestjs = fileURLToPath(new URL('../../packages/nestjs/', import.meta.url))

/** The @sluice/nestjs test files that run on NestJS 10 (GraphQL's drivers need NestJS 11). */
export const files = [
  'guard.test.ts',
  'scenarios.test.ts',
  'throttler-port.test.ts',
  'websocket.test.ts',
]

/**
 * Nest's decorators are TypeScript's legacy ones, whose design metadata its dependency
 * injection reads: every file with decorators is compiled so, as a Nest app is.
 */
function legacyDecorators(): Plugin {
  return {
    name: 'sluice:legacy-decorators',
    enforce: 'pre',
    transform(code, id) {
      if (!id.endsWith('.ts') || id.includes('/node_modules/') || !/^\s*@\w/m.test(code)) {
        return null
      }
      const out = ts.transpileModule(code, {
        fileName: id,
        compilerOptions: {
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.ESNext,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          sourceMap: true,
          inlineSources: true,
        },
      })
      return { code: out.outputText, map: out.sourceMapText ?? null }
    },
  }
}

// As the workspace's configuration: workspace packages from source.
const conditions = ['@sluice/source', 'node', 'development|production']

export default defineConfig({
  root: here,
  plugins: [legacyDecorators()],
  resolve: {
    conditions,
    // Resolved from this package, whoever imports them.
    dedupe: [
      '@nestjs/common',
      '@nestjs/core',
      '@nestjs/platform-express',
      '@nestjs/platform-fastify',
      '@nestjs/platform-ws',
      '@nestjs/testing',
      '@nestjs/websockets',
      'reflect-metadata',
      'rxjs',
    ],
  },
  ssr: { resolve: { conditions } },
  test: {
    include: [...files.map((file) => `${nestjs}test/${file}`), `${here}nest10/*.test.ts`],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
