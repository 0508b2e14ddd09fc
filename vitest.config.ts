import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import type { Plugin } from 'vite'
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config'

// Every workspace package (packages/*, examples/*, bench) is one vitest project, named
// after its package.json, testing its source directly: the "@sluice/source" export
// condition points workspace imports at src/index.ts, so no build is needed between packages.
const workspaceDirs = ['packages', 'examples']
  .flatMap((parent) =>
    existsSync(parent) ? readdirSync(parent).map((child) => join(parent, child)) : [],
  )
  .concat(['bench'])
  .filter((dir) => existsSync(join(dir, 'package.json')))

const projects: TestProjectInlineConfiguration[] = workspaceDirs.map((dir) => {
  const { name } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string }
  const setup = join(dir, 'test', 'global-setup.ts')
  return {
    extends: true,
    test: {
      name,
      root: dir,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      ...(existsSync(setup) ? { globalSetup: ['test/global-setup.ts'] } : {}),
    },
  }
})

const DECORATOR_LINE = /^\s*@[A-Za-z_$][\w$.]*\s*(\(|$)/m

// Packages written for TypeScript's legacy decorators (`experimentalDecorators` with
// `emitDecoratorMetadata`, as NestJS apps compile), whose own tsconfig says so.
const LEGACY_DECORATORS = ['/packages/nestjs/']

/**
 * Vite 8's transformer leaves TC39 standard decorators untouched, so files that use `@`
 * syntax are compiled by TypeScript itself before vite sees them: as TC39 decorators, or
 * as legacy ones with their design-type metadata for the packages that use those.
 */
function tc39Decorators(): Plugin {
  return {
    name: 'sluice:tc39-decorators',
    enforce: 'pre',
    transform(code, id) {
      if (!id.endsWith('.ts') || id.includes('/node_modules/') || !DECORATOR_LINE.test(code)) {
        return null
      }
      const out = ts.transpileModule(code, {
        fileName: id,
        compilerOptions: {
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.ESNext,
          sourceMap: true,
          inlineSources: true,
          verbatimModuleSyntax: false,
          ...(LEGACY_DECORATORS.some((dir) => id.includes(dir))
            ? { experimentalDecorators: true, emitDecoratorMetadata: true }
            : {}),
        },
      })
      return { code: out.outputText, map: out.sourceMapText ?? null }
    },
  }
}

// Vitest also hands these to its workers as Node's --conditions, so they must be ones Node
// can follow: no 'module' (vite's default), whose builds may not load in Node, e.g.
// @opentelemetry/api's extensionless ESM.
const conditions = ['@sluice/source', 'node', 'development|production']

// graphql 16 ships a CommonJS build (`main`) and an ESM one (`module`). Node, and so every
// package vitest leaves to Node (graphql-yoga), loads the CommonJS one; vite would pick the
// ESM one for the files it transforms, and two copies of graphql refuse each other's
// schemas and errors. Point vite at the one Node loads.
const alias = [{ find: /^graphql$/, replacement: 'graphql/index.js' }]

export default defineConfig({
  plugins: [tc39Decorators()],
  resolve: { conditions, alias },
  ssr: { resolve: { conditions } },
  test: {
    projects,
    reporters: ['default', './scripts/summary-reporter.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
