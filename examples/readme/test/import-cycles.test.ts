/**
 * Issue 22: no import cycles in any package's source. Reads every relative import and
 * export (those of types only aside) of `packages/<name>/src` (tests left out) and looks for a cycle by depth-first
 * search; a cycle found is printed file by file.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
const PACKAGES = join(ROOT, 'packages')

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return /\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) ? [path] : []
  })
}

// `import type` and `export type` are erased when compiled: they load nothing, so they
// make no cycle at run time.
const IMPORT = /(?:^|\n)\s*(?:import|export)\s(?!type\s)[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const found: string[] = []
  for (const match of text.matchAll(IMPORT)) {
    const base = resolve(dirname(file), match[1]!.replace(/\.js$/, ''))
    const target = [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts')].find(existsSync)
    if (target !== undefined) found.push(target)
  }
  return found
}

/** One cycle of the graph, as a list of files, or undefined. */
export function findCycle(files: readonly string[]): string[] | undefined {
  const edges = new Map(files.map((file) => [file, importsOf(file)]))
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === 'done') return undefined
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file]
    state.set(file, 'open')
    path.push(file)
    for (const next of edges.get(file) ?? []) {
      const cycle = visit(next)
      if (cycle !== undefined) return cycle
    }
    path.pop()
    state.set(file, 'done')
    return undefined
  }
  for (const file of files) {
    const cycle = visit(file)
    if (cycle !== undefined) return cycle
  }
  return undefined
}

describe('import cycles', () => {
  const packages = readdirSync(PACKAGES).filter((name) => existsSync(join(PACKAGES, name, 'src')))

  it.each(packages)('packages/%s/src has none', (name) => {
    const cycle = findCycle(sources(join(PACKAGES, name, 'src')))
    expect(cycle?.map((file) => relative(ROOT, file)).join(' → ')).toBeUndefined()
  })

  it('finds one when there is one', () => {
    // The checker itself, on two files of this test's own that import each other.
    const dir = join(ROOT, 'examples/readme/.blocks/cycle-check')
    const a = join(dir, 'a.ts')
    const b = join(dir, 'b.ts')
    return import('node:fs').then(({ mkdirSync, writeFileSync, rmSync }) => {
      mkdirSync(dir, { recursive: true })
      writeFileSync(a, "import { b } from './b'\nexport const a = () => b\n")
      writeFileSync(b, "export { a as b } from './a'\n")
      try {
        expect(findCycle([a, b])?.map((file) => relative(dir, file))).toEqual([
          'a.ts',
          'b.ts',
          'a.ts',
        ])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })
})
