import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const root = new URL('../../../', import.meta.url)

/**
 * README blocks that need Bun, Deno or workerd cannot run in the README harness (Node):
 * they are marked `<!-- not run: needs X (examples/runtimes/FILE, ...) -->`. Each must be
 * that example file, word for word, which the smoke test runs in its runtime.
 */
const MARKED =
  /<!-- not run: needs [^(]*\((examples\/runtimes\/[^,)]+)[^>]*-->\s*\n```ts\n([\s\S]*?)^```$/gm

describe.each([
  'packages/hono/README.md',
  'packages/cloudflare/README.md',
  'packages/deno-kv/README.md',
])('%s', (readme) => {
  const text = readFileSync(new URL(readme, root), 'utf8')
  const blocks = [...text.matchAll(MARKED)].map((m) => ({ file: m[1]!, code: m[2]! }))

  it('shows runtime examples', () => {
    expect(blocks.length).toBeGreaterThan(0)
  })

  it.each(blocks.map((block) => [block.file, block] as const))(
    'the block for %s is that file, as run by its test',
    (file, block) => {
      expect(block.code).toBe(readFileSync(new URL(file, root), 'utf8'))
    },
  )
})
