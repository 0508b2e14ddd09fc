import { ManualClock } from '@sluice/core'
import { forgetWarnings } from '@sluice/http/adapter'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { durableObjectStore } from '../src/index'
import { inProcessNamespace } from './in-process'

afterEach(() => {
  vi.restoreAllMocks()
})

describe('durableObjectStore: durations in bare milliseconds', () => {
  it('warns once for each of timeout, leaseTtl and probeInterval', () => {
    forgetWarnings()
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const { namespace } = inProcessNamespace(new ManualClock())
    durableObjectStore({ namespace, timeout: 2, leaseTtl: 60, probeInterval: 5 })
    durableObjectStore({ namespace, timeout: '2s', leaseTtl: 60_000, probeInterval: '5s' })
    expect(
      spy.mock.calls.map(([text, options]) => [(options as { code: string }).code, text]),
    ).toEqual(
      [
        ['timeout', 2],
        ['leaseTtl', 60],
        ['probeInterval', 5],
      ].map(([option, value]) => [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining(
          `durableObjectStore: "${option}" is ${value}, which is ${value} milliseconds`,
        ),
      ]),
    )
  })
})
