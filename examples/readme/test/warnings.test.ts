import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../..', import.meta.url))

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sources(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

/**
 * Every code a shipped source passes to emitWarning, or names as a remote store's outage
 * and recovery warnings (`warnings: { down, recovered }` of StoreHealth, which gives them).
 */
function warningCodes(): Set<string> {
  const codes = new Set<string>()
  for (const pkg of readdirSync(join(root, 'packages'))) {
    const src = join(root, 'packages', pkg, 'src')
    if (!existsSync(src)) continue
    for (const file of sources(src)) {
      const text = readFileSync(file, 'utf8')
      for (const match of text.matchAll(/emitWarning\(\s*[^,]+,\s*'(ERR_SLUICE_[A-Z0-9_]+)'/g)) {
        codes.add(match[1]!)
      }
      for (const match of text.matchAll(/\b(?:down|recovered): '(ERR_SLUICE_[A-Z0-9_]+)'/g)) {
        codes.add(match[1]!)
      }
    }
  }
  return codes
}

describe('warning help pages', () => {
  it('every warning a package gives has docs/warnings/<CODE>.md, and every page a warning', () => {
    const codes = warningCodes()
    expect(codes.size).toBeGreaterThanOrEqual(11)
    const pages = readdirSync(join(root, 'docs', 'warnings')).map((f) => f.replace(/\.md$/, ''))
    expect([...codes].sort()).toEqual(pages.sort())
    for (const code of codes) {
      const page = readFileSync(join(root, 'docs', 'warnings', `${code}.md`), 'utf8')
      expect(page.startsWith(`# ${code}\n`)).toBe(true)
      expect(page).toMatch(/\*\*Fix\.\*\*/)
    }
  })
})
