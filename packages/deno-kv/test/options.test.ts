import { forgetWarnings } from '@sluice/keyed/store'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { denoKvStore } from '../src/index'

// Construction reads nothing from the database: a stand-in with its two methods will do.
const kv = { getMany: async () => [], atomic: () => ({}) } as never

afterEach(() => {
  vi.restoreAllMocks()
})

describe('denoKvStore: durations in bare milliseconds', () => {
  it('warns once about leaseTtl', () => {
    forgetWarnings()
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    denoKvStore({ kv, leaseTtl: 60 })
    denoKvStore({ kv, leaseTtl: 60 })
    denoKvStore({ kv, leaseTtl: '60s' })
    expect(
      spy.mock.calls.map(([text, options]) => [(options as { code: string }).code, text]),
    ).toEqual([
      [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining('denoKvStore: "leaseTtl" is 60, which is 60 milliseconds'),
      ],
    ])
  })
})
