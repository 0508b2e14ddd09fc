import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { escapeKey, stateKey } from './keys'

const fixedSpec = { algorithm: 'fixed-window', limit: 1, window: 1000 } as const
const named = (name: string) => ({
  name,
  id: `${name}|fixed-window:1:1000`,
  state: `${name}|fixed-window`,
  spec: fixedSpec,
})
const bucket = (name: string, limit: number) => ({
  name,
  id: `${name}|token-bucket:${limit}:1000:${limit}`,
  state: `${name}|token-bucket`,
  spec: { algorithm: 'token-bucket', limit, window: 1000, capacity: limit } as const,
})

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
  it('lays out <prefix>{<client key>}:<layout>:<digest>', () => {
    expect(stateKey('sluice:', '203.0.113.7', named('default'))).toMatch(
      /^sluice:\{203\.0\.113\.7\}:v3:[\w-]{10}$/,
    )
  })

  it('keeps policies that share a name apart by their algorithm (issue 10)', () => {
    const fixed = named('default')
    const sliding = {
      name: 'default',
      id: 'default|sliding-window:100:60000:10',
      state: 'default|sliding-window',
      spec: { algorithm: 'sliding-window', limit: 100, window: 60_000, slots: 10 } as const,
    }
    expect(stateKey('p:', 'ip', fixed)).not.toBe(stateKey('p:', 'ip', sliding))
    expect(stateKey('p:', 'ip', fixed)).toBe(stateKey('p:', 'ip', { ...fixed }))
  })

  it('keys a window by name and algorithm, so a changed spec finds the state it carries', () => {
    const before = named('api')
    const after = { ...before, id: 'api|fixed-window:5:1000', spec: { ...fixedSpec, limit: 5 } }
    expect(stateKey('p:', 'ip', after)).toBe(stateKey('p:', 'ip', before))
  })

  it('keys a bucket by name and algorithm too: its state carries over as a window’s does', () => {
    expect(stateKey('p:', 'ip', bucket('api', 5))).toBe(stateKey('p:', 'ip', bucket('api', 6)))
    expect(stateKey('p:', 'ip', bucket('api', 5))).not.toBe(stateKey('p:', 'ip', named('api')))
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
