import { warningsOf } from '@sluice/keyed/testing'
import { describe, expect, it } from 'vitest'
import { denoKvStore } from '../src/index'

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
