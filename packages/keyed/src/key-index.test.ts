import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { KeyIndex } from './key-index'

/** A reference LRU: a Map's insertion order, re-inserting a key on use. */
class ReferenceLru {
  readonly #keys = new Map<string, true>()
  constructor(readonly max: number) {}
  has(key: string) {
    return this.#keys.has(key)
  }
  use(key: string) {
    this.#keys.delete(key)
    this.#keys.set(key, true)
  }
  insert(key: string): string | undefined {
    let evicted: string | undefined
    if (this.#keys.size >= this.max) {
      evicted = this.#keys.keys().next().value
      this.#keys.delete(evicted!)
    }
    this.#keys.set(key, true)
    return evicted
  }
  delete(key: string) {
    this.#keys.delete(key)
  }
  get size() {
    return this.#keys.size
  }
}

describe('KeyIndex', () => {
  it('hands out rows as keys arrive and grows its rows by doubling, up to max', () => {
    const grown: number[] = []
    const index = new KeyIndex(200, (rows) => grown.push(rows))
    expect(grown).toEqual([])
    for (let i = 0; i < 150; i++) expect(index.insert(`k${i}`)).toBe(i)
    expect(grown).toEqual([8, 16, 32, 64, 128, 200])
    expect(index.size).toBe(150)
    expect(index.find('k42')).toBe(42)
    expect(index.keyAt(42)).toBe('k42')
    expect(index.find('nobody')).toBe(-1)
  })

  it('evicts the least recently used key once full, handing its row to the newcomer', () => {
    const index = new KeyIndex(3, () => {})
    index.insert('a')
    index.insert('b')
    index.insert('c')
    index.touch(index.find('a')) // b is now the least recently used
    const row = index.insert('d')
    expect(index.find('b')).toBe(-1)
    expect(row).toBe(1)
    expect(index.keyAt(row)).toBe('d')
    expect(index.size).toBe(3)
  })

  it('gives a removed key’s row to the next key without growing', () => {
    const grown: number[] = []
    const index = new KeyIndex(100, (rows) => grown.push(rows))
    for (let i = 0; i < 64; i++) index.insert(`k${i}`)
    index.delete('k10')
    index.delete('k20')
    expect(index.size).toBe(62)
    expect([index.insert('x'), index.insert('y')].sort((a, b) => a - b)).toEqual([10, 20])
    expect(grown).toEqual([8, 16, 32, 64])
    expect(index.keyAt(10) === 'x' || index.keyAt(10) === 'y').toBe(true)
  })

  it('keeps the same keys as a reference LRU through any sequence of use', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('use' as const), key: fc.nat(40) }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.nat(40) }),
    )
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(op, { maxLength: 300 }), (max, ops) => {
        const index = new KeyIndex(max, () => {})
        const reference = new ReferenceLru(max)
        for (const { kind, key } of ops) {
          const name = `k${key}`
          if (kind === 'delete') {
            index.delete(name)
            reference.delete(name)
          } else if (reference.has(name)) {
            index.touch(index.find(name))
            reference.use(name)
          } else {
            const evicted = reference.insert(name)
            const row = index.insert(name)
            expect(index.keyAt(row)).toBe(name)
            if (evicted !== undefined) expect(index.find(evicted)).toBe(-1)
          }
          expect(index.size).toBe(reference.size)
        }
        for (let key = 0; key <= 40; key++) {
          expect(index.find(`k${key}`) !== -1).toBe(reference.has(`k${key}`))
        }
      }),
      { numRuns: 300 },
    )
  })
})
