import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { escapeKey, stateKey } from './keys'

const named = (name: string) => ({ name, id: `${name}|fixed-window:1:1000` })

/** Redis Cluster's rule: the hash tag is between the first `{` and the first `}` after it. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{')
  if (open === -1) return undefined
  const close = key.indexOf('}', open + 1)
  if (close === -1 || close === open + 1) return undefined
  return key.slice(open + 1, close)
}

describe('escapeKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['a}b', 'a%7Db'],
    ['{a}', '%7Ba%7D'],
    ['100%', '100%25'],
    ['%7D', '%257D'],
    ['user:42', 'user:42'],
    ['', '%'],
  ])('escapes %j as %j', (key, escaped) => {
    expect(escapeKey(key)).toBe(escaped)
  })

  it('is one-to-one, and never yields a brace', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        expect(escapeKey(a)).not.toMatch(/[{}]/)
        if (a !== b) expect(escapeKey(a)).not.toBe(escapeKey(b))
      }),
    )
  })
})

describe('stateKey', () => {
  it('lays out <prefix>{<client key>}:<layout>:<digest of the policy id>', () => {
    expect(stateKey('sluice:', '203.0.113.7', named('default'))).toMatch(
      /^sluice:\{203\.0\.113\.7\}:v2:[\w-]{10}$/,
    )
  })

  it('keeps policies that share a name apart by their id (issue 10)', () => {
    const fixed = { name: 'default', id: 'default|fixed-window:100:60000' }
    const sliding = { name: 'default', id: 'default|sliding-window:100:60000:10' }
    expect(stateKey('p:', 'ip', fixed)).not.toBe(stateKey('p:', 'ip', sliding))
    expect(stateKey('p:', 'ip', fixed)).toBe(stateKey('p:', 'ip', { ...fixed }))
  })

  it('gives every policy of one client key the same hash tag, whatever the key holds', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.constantFrom('}', '{', '{}', '}:other', 'sluice:{x}:p', '')),
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        (clientKey, p1, p2) => {
          const tag = hashTag(stateKey('sluice:', clientKey, named(p1)))
          expect(tag).toBe(escapeKey(clientKey))
          expect(hashTag(stateKey('sluice:', clientKey, named(p2)))).toBe(tag)
        },
      ),
    )
  })

  it('keeps client keys that mimic the layout apart', () => {
    const tricky = ['a', 'a}', '{a}', 'a}:p', 'sluice:a', 'sluice:{a}:p', '}', '{', ':', '']
    const keys = tricky.map((clientKey) => stateKey('sluice:', clientKey, named('p')))
    expect(new Set(keys).size).toBe(tricky.length)
  })
})
