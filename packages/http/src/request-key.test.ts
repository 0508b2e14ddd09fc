import { createHash } from 'node:crypto'
import { boundedKey, MAX_KEY_LENGTH } from '@sluice/keyed/store'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { FALLBACK_KEY } from './keys'

afterEach(() => {
  vi.restoreAllMocks()
})

/**
 * `KeyNormalizer` from a fresh module graph, so the process-wide warning memory starts
 * empty, with the codes of the warnings it gives.
 */
async function normalizer(custom: boolean) {
  vi.resetModules()
  const { KeyNormalizer } = await import('./request-key')
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
  return {
    keys: new KeyNormalizer('rateLimit', custom),
    codes: () => spy.mock.calls.map(([, options]) => (options as { code?: string }).code),
    texts: () => spy.mock.calls.map(([text]) => String(text)),
  }
}

describe('boundedKey', () => {
  it('keeps a key of up to 256 characters as it is', () => {
    expect(MAX_KEY_LENGTH).toBe(256)
    const key = 'k'.repeat(256)
    expect(boundedKey(key)).toBe(key)
    expect(boundedKey('')).toBe('')
  })

  it('turns a longer key into its SHA-256, base64url: stable, distinct, 50 characters', () => {
    const long = 'k'.repeat(257)
    const digest = createHash('sha256').update(long).digest('base64url')
    expect(boundedKey(long)).toBe(`sha256:${digest}`)
    expect(boundedKey(long)).toHaveLength(50)
    expect(boundedKey('k'.repeat(257))).toBe(boundedKey(long))
    expect(boundedKey(`${'k'.repeat(256)}j`)).not.toBe(boundedKey(long))
    expect(boundedKey('x'.repeat(16_384))).toHaveLength(50)
  })

  it('hashes the UTF-8 bytes, as every process (and Redis) must', () => {
    const key = 'ключ'.repeat(100)
    expect(boundedKey(key)).toBe(
      `sha256:${createHash('sha256').update(key, 'utf8').digest('base64url')}`,
    )
  })
})

describe('KeyNormalizer', () => {
  it('counts a missing or empty key under the fallback key, warning once', async () => {
    const { keys, codes, texts } = await normalizer(true)
    expect(keys.normalize(undefined)).toBe(FALLBACK_KEY)
    expect(keys.normalize('')).toBe(FALLBACK_KEY)
    expect(keys.normalize(undefined)).toBe(FALLBACK_KEY)
    expect(codes()).toEqual(['ERR_SLUICE_FALLBACK_KEY'])
    expect(texts()[0]).toContain('Return a key for every request')
  })

  it('leaves a missing address under the built-in key to the adapter, which knows why', async () => {
    const { keys, texts } = await normalizer(false)
    expect(keys.normalize(undefined)).toBe('(no key)')
    expect(texts()).toEqual([])
  })

  it('refuses a key that is no string, naming the option', async () => {
    const { keys } = await normalizer(true)
    expect(() => keys.normalize(42)).toThrow(
      new TypeError('rateLimit: "key" must return a string or undefined, got 42'),
    )
    expect(() => keys.normalize(null)).toThrow(
      new TypeError('rateLimit: "key" must return a string or undefined, got null'),
    )
    expect(() => keys.normalize({})).toThrow(TypeError)
  })

  it('bounds a long key', async () => {
    const { keys } = await normalizer(true)
    const long = 'h'.repeat(1_000)
    expect(keys.normalize(long)).toBe(boundedKey(long))
    expect(keys.normalize('short')).toBe('short')
  })

  it("hashes a key that reads as a digest: no client can forge another's long key (issue 24)", async () => {
    const { keys } = await normalizer(true)
    const long = 'h'.repeat(1_000)
    // The digest form of a long key is what the decision, the events and the logs show.
    const forged = boundedKey(long)
    expect(keys.normalize(forged)).not.toBe(keys.normalize(long))
    expect(keys.normalize(forged)).toBe(keys.normalize(forged))
    expect(keys.normalize(forged)).toMatch(/^sha256:[\w-]{43}$/)
  })

  it('warns once about a custom key that is a raw IPv6 address', async () => {
    const { keys, codes, texts } = await normalizer(true)
    expect(keys.normalize('2001:db8::1')).toBe('2001:db8::1')
    keys.normalize('2001:db8::2')
    keys.normalize('2001:db8::3')
    expect(codes()).toEqual(['ERR_SLUICE_KEY_RAW_IPV6'])
    expect(texts()[0]).toContain('a custom key is a raw IPv6 address ("2001:db8::1")')
  })

  it.each(['10.0.0.1:53211', '[2001:db8::1]:443', '::ffff:127.0.0.1:42780'])(
    'warns once about a custom key with a port: %s',
    async (key) => {
      const { keys, codes } = await normalizer(true)
      expect(keys.normalize(key)).toBe(key)
      keys.normalize(key)
      expect(codes()).toEqual(['ERR_SLUICE_KEY_WITH_PORT'])
    },
  )

  it('leaves plain keys, and the built-in extractors, alone', async () => {
    const custom = await normalizer(true)
    for (const key of ['10.0.0.1', 'user:42', 'GET /users/:id', 'tenant-a', 'api-key:abc']) {
      custom.keys.normalize(key)
    }
    expect(custom.codes()).toEqual([])
    const builtIn = await normalizer(false)
    builtIn.keys.normalize('2001:db8::1')
    builtIn.keys.normalize('10.0.0.1:53211')
    expect(builtIn.codes()).toEqual([])
  })

  it('checks the shape of the first 1000 keys only', async () => {
    const { keys, codes } = await normalizer(true)
    for (let i = 0; i < 1_000; i++) keys.normalize(`user:${i}`)
    keys.normalize('2001:db8::1')
    expect(codes()).toEqual([])
  })
})
