/**
 * No import cycles in any package's source. Reads every relative import and export of
 * `packages/<name>/src` (tests left out), those of types only included, and finds the
 * strongly connected components of that graph (Tarjan); each cycle found is printed file
 * by file. Type-only imports load nothing at run time, but a cycle through them still ties
 * the files' layout together: a type moved to a leaf file breaks it.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
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

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g

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

/** Every cycle of the graph: its strongly connected components of two files or more (sorted). */
export function findCycles(files: readonly string[]): string[][] {
  const edges = new Map(files.map((file) => [file, importsOf(file)]))
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const cycles: string[][] = []
  let next = 0
  const visit = (file: string): void => {
    index.set(file, next)
    low.set(file, next++)
    stack.push(file)
    onStack.add(file)
    for (const to of edges.get(file) ?? []) {
      if (!index.has(to)) {
        visit(to)
        low.set(file, Math.min(low.get(file)!, low.get(to)!))
      } else if (onStack.has(to)) {
        low.set(file, Math.min(low.get(file)!, index.get(to)!))
      }
    }
    if (low.get(file) !== index.get(file)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(member)
    } while (member !== file)
    if (component.length > 1) cycles.push(component.sort())
  }
  for (const file of files) if (!index.has(file)) visit(file)
  return cycles.sort((x, y) => (x[0]! < y[0]! ? -1 : 1))
}

describe('import cycles (type-only imports included)', () => {
  const packages = readdirSync(PACKAGES).filter((name) => existsSync(join(PACKAGES, name, 'src')))

  it.each(packages)('packages/%s/src has none', (name) => {
    const src = join(PACKAGES, name, 'src')
    const found = findCycles(sources(src)).map((cycle) => cycle.map((file) => relative(src, file)))
    expect(
      found.map((c) => c.join(' ↔ ')),
      `cycles in packages/${name}/src`,
    ).toEqual([])
  })

  it('finds one, through a type-only import too', () => {
    // The checker itself, on files of this test's own that import each other.
    const dir = join(ROOT, 'examples/readme/.blocks/cycle-check')
    const file = (name: string, text: string) => {
      writeFileSync(join(dir, name), text)
      return join(dir, name)
    }
    mkdirSync(dir, { recursive: true })
    try {
      const a = file('a.ts', "import { b } from './b'\nexport const a = () => b\n")
      const b = file('b.ts', "export { a as b } from './a'\n")
      const c = file('c.ts', "import type { D } from './d'\nexport interface C { d?: D }\n")
      const d = file('d.ts', "import type { C } from './c'\nexport interface D { c?: C }\n")
      const leaf = file('e.ts', "import type { C } from './c'\nexport type E = C\n")
      const cycles = findCycles([a, b, c, d, leaf])
      expect(cycles.map((cycle) => cycle.map((f) => relative(dir, f)))).toEqual([
        ['a.ts', 'b.ts'],
        ['c.ts', 'd.ts'],
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
