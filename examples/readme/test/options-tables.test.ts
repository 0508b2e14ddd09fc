/**
 * Every options table of the READMEs (a table whose first column is `option`) against the
 * factory it documents: each option the table names is one the factory accepts, and each
 * option the factory accepts is in the table. What a factory accepts is read from the
 * factory itself: the list of names it hands `readOptions` when it checks its options,
 * recorded as it is built, not a copy kept here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { durableObjectStore } from '@sluice/cloudflare'
import { clusterStore } from '@sluice/cluster'
import type * as Validation from '@sluice/core/validation'
import { denoKvStore } from '@sluice/deno-kv'
import { bulkhead, rateLimit } from '@sluice/express'
import { keyedLimiter, memoryStore, withLeases } from '@sluice/keyed'
import { redisStore } from '@sluice/redis'
import { describe, expect, it, vi } from 'vitest'

const root = new URL('../../../', import.meta.url)

/** Each `readOptions(factory, options, known)` call made since the list was last emptied. */
const checks = vi.hoisted(() => [] as { factory: string; known: string[] }[])
vi.mock('@sluice/core/validation', async (importOriginal) => {
  const actual = await importOriginal<typeof Validation>()
  const readOptions: typeof actual.readOptions = (factory, value, known, hints) => {
    checks.push({ factory, known: [...known] })
    return actual.readOptions(factory, value, known, hints)
  }
  return { ...actual, readOptions }
})

interface Documented {
  document: string
  /** The heading the table is under. */
  heading: string
  /** The factory's name in its messages, as it passes it to `readOptions`. */
  factory: string
  build: () => unknown
}

let clusterStores = 0

/** Every options table there is, with the factory it documents. */
const documented: Documented[] = [
  {
    document: 'packages/express/README.md',
    heading: '## `rateLimit(options)`',
    factory: 'rateLimit',
    build: () => rateLimit({}),
  },
  {
    document: 'packages/express/README.md',
    heading: '## `bulkhead(options)`',
    factory: 'bulkhead',
    build: () => bulkhead({}),
  },
  {
    document: 'packages/keyed/README.md',
    heading: '## `keyedLimiter(options)`',
    factory: 'keyedLimiter',
    build: () => keyedLimiter({}),
  },
  {
    document: 'packages/keyed/README.md',
    heading: '## Quota leases',
    factory: 'withLeases',
    build: () => withLeases(memoryStore(), {}),
  },
  {
    document: 'packages/redis/README.md',
    heading: '## Options',
    factory: 'redisStore',
    // Nothing is sent until the first call: a sendCommand function is client enough.
    build: () => redisStore({ client: async () => 'OK' }),
  },
  {
    document: 'packages/cluster/README.md',
    heading: '## Options',
    factory: 'clusterStore',
    // Names of its own: this test process is a primary, so each store made here hosts.
    build: () => clusterStore({ name: `options-table-${++clusterStores}` }),
  },
  {
    document: 'packages/cloudflare/README.md',
    heading: '## Options',
    factory: 'durableObjectStore',
    build: () =>
      durableObjectStore({ namespace: { idFromName: () => ({}), get: () => ({ fetch }) } }),
  },
  {
    document: 'packages/deno-kv/README.md',
    heading: '## Options',
    factory: 'denoKvStore',
    build: () => denoKvStore({ kv: { getMany: async () => [], atomic: () => ({}) } as never }),
  },
]

interface Table {
  document: string
  heading: string
  /** The option names of its first column: every `code` span, call parentheses dropped. */
  names: string[]
}

/** The options tables of one document, each under the heading it follows. */
function optionTables(document: string): Table[] {
  const tables: Table[] = []
  let heading = ''
  const lines = readFileSync(new URL(document, root), 'utf8').split('\n')
  lines.forEach((line, i) => {
    if (line.startsWith('#')) heading = line
    if (!/^\|\s*option\s*\|/.test(line)) return
    const names: string[] = []
    for (let j = i + 2; lines[j]?.startsWith('|'); j++) {
      const first = lines[j]?.split('|')[1] ?? ''
      for (const [, name = ''] of first.matchAll(/`([^`]+)`/g))
        names.push(name.replace(/\(.*\)$/, ''))
    }
    tables.push({ document, heading, names })
  })
  return tables
}

const readmes = [
  'README.md',
  ...readdirSync(new URL('packages/', root))
    .map((dir) => `packages/${dir}/README.md`)
    .filter((file) => existsSync(new URL(file, root))),
]
const tables = readmes.flatMap(optionTables)

describe('README options tables', () => {
  it('are each checked against the factory they document', () => {
    const where = ({ document, heading }: { document: string; heading: string }) =>
      `${document} ${heading}`
    expect(tables.map(where).sort()).toEqual(documented.map(where).sort())
  })

  describe.each(documented)('$document, $heading', ({ document, heading, factory, build }) => {
    it(`names exactly the options ${factory}() accepts`, () => {
      checks.length = 0
      build()
      const accepted = checks.find((check) => check.factory === factory)?.known
      expect(accepted, `${factory}() checked no options`).toBeDefined()
      const named = tables.find((t) => t.document === document && t.heading === heading)?.names
      expect({
        'named but not accepted': (named ?? []).filter((name) => !accepted?.includes(name)),
        'accepted but not named': (accepted ?? []).filter((name) => !named?.includes(name)),
      }).toEqual({ 'named but not accepted': [], 'accepted but not named': [] })
    })
  })
})
