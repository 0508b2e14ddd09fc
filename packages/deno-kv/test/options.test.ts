import { warningsOf } from '@sluice/keyed/testing'
import { describe, expect, it } from 'vitest'
import { denoKvStore } from '../src/index'
import { BAD_PREFIXES, LONGEST_PREFIX } from './prefixes'

// Construction reads nothing from the database: a stand-in with its two methods will do.
const kv = { getMany: async () => [], atomic: () => ({}) } as never

describe('denoKvStore: durations in bare milliseconds', () => {
  it('warns once about leaseTtl', () => {
    expect(
      warningsOf(() => {
        denoKvStore({ kv, leaseTtl: 60 })
        denoKvStore({ kv, leaseTtl: 60 })
        denoKvStore({ kv, leaseTtl: '60s' })
      }),
    ).toEqual([
      [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining('denoKvStore: "leaseTtl" is 60, which is 60 milliseconds'),
      ],
    ])
  })
})

describe('denoKvStore prefix', () => {
  it.each(BAD_PREFIXES)('refuses %s at construction', (_, prefix, message) => {
    expect(() => denoKvStore({ kv, prefix: prefix as never })).toThrow(message)
  })

  it('takes every kind of key part, up to 512 bytes', () => {
    expect(() =>
      denoKvStore({ kv, prefix: ['app', 7, 7n, true, new Uint8Array([0, 1])] }),
    ).not.toThrow()
    expect(() => denoKvStore({ kv, prefix: LONGEST_PREFIX })).not.toThrow()
  })

  it('reads leaseTtl by the rules of every remote store', () => {
    expect(() => denoKvStore({ kv, leaseTtl: '30d' })).toThrow(
      new RangeError(
        'denoKvStore: "leaseTtl" must be at most 2147483647 ms (about 24.8 days), got "30d"',
      ),
    )
  })
})
