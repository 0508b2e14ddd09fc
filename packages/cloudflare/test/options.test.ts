import { ManualClock } from '@sluice/core'
import { warningsOf } from '@sluice/keyed/testing'
import { describe, expect, it } from 'vitest'
import { durableObjectStore } from '../src/index'
import { inProcessNamespace } from './in-process'

describe('durableObjectStore: durations in bare milliseconds', () => {
  it('warns once for each of timeout, leaseTtl and probeInterval', () => {
    const { namespace } = inProcessNamespace(new ManualClock())
    expect(
      warningsOf(() => {
        durableObjectStore({ namespace, timeout: 2, leaseTtl: 60, probeInterval: 5 })
        durableObjectStore({ namespace, timeout: 2, leaseTtl: 60, probeInterval: 5 })
        durableObjectStore({ namespace, timeout: '2s', leaseTtl: 60_000, probeInterval: '5s' })
      }),
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
