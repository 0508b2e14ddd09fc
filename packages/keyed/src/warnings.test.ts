import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { compilePolicy, compilePolicyList, type PolicyOptions } from './policy'
import { forgetWarnings, warnIfBareMilliseconds } from './warnings'

/** The SluiceWarnings given since the test began: [code, message]. */
let warned: () => [string, string][]
beforeEach(() => {
  forgetWarnings()
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
  warned = () =>
    spy.mock.calls.map(([message, options]) => [(options as { code: string }).code, `${message}`])
})
afterEach(() => {
  vi.restoreAllMocks()
})

const help = (code: string) =>
  `(see https://github.com/sluice-js/sluice/blob/main/docs/warnings/${code}.md)`

describe('warnIfBareMilliseconds', () => {
  it('warns once about a bare number under 1000, saying what to write', () => {
    warnIfBareMilliseconds('bulkhead', 'queueTimeout', 5)
    warnIfBareMilliseconds('bulkhead', 'queueTimeout', 5)
    expect(warned()).toEqual([
      [
        'ERR_SLUICE_DURATION_IN_MS',
        `bulkhead: "queueTimeout" is 5, which is 5 milliseconds, not seconds. Write '5s' if you meant seconds, or '5ms' to silence this. ${help('ERR_SLUICE_DURATION_IN_MS')}`,
      ],
    ])
  })

  it('gives a window its own code', () => {
    warnIfBareMilliseconds('rateLimit', 'window', 60)
    warnIfBareMilliseconds('rateLimit', 'policies[1].window', 999)
    warnIfBareMilliseconds('rateLimit', 'windowed', 60)
    expect(warned().map(([code]) => code)).toEqual([
      'ERR_SLUICE_WINDOW_IN_MS',
      'ERR_SLUICE_WINDOW_IN_MS',
      'ERR_SLUICE_DURATION_IN_MS',
    ])
  })

  it('leaves strings, zero, 1000 and more, and absent or invalid values alone', () => {
    for (const value of ['5s', '250ms', 0, 1000, 60_000, undefined, null, -5, Number.NaN]) {
      warnIfBareMilliseconds('bulkhead', 'queueTimeout', value)
    }
    expect(warned()).toEqual([])
  })
})

describe('policy durations in bare milliseconds', () => {
  it.each<[PolicyOptions, string, string]>([
    [{ window: 60 }, 'window', 'ERR_SLUICE_WINDOW_IN_MS'],
    [{ block: { for: 60 } }, 'block.for', 'ERR_SLUICE_DURATION_IN_MS'],
    [{ algorithm: 'warm-up', window: '1s', warmUp: 120 }, 'warmUp', 'ERR_SLUICE_DURATION_IN_MS'],
  ])('%j warns about "%s"', (options, option, code) => {
    compilePolicy(options, 'rateLimit')
    expect(warned()).toEqual([[code, expect.stringContaining(`rateLimit: "${option}" is `)]])
  })

  it('names the entry of a list', () => {
    compilePolicyList([{ limit: 1 }, { name: 'ban', limit: 2, block: { for: 30 } }], 'rateLimit')
    expect(warned()).toEqual([
      [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining(
          `rateLimit: "policies[1].block.for" is 30, which is 30 milliseconds`,
        ),
      ],
    ])
  })

  it('is quiet with units, or with 1000 and more', () => {
    compilePolicy({ window: '60s', block: { for: '60s' } }, 'rateLimit')
    compilePolicy({ algorithm: 'warm-up', window: 60_000, warmUp: '2m' }, 'rateLimit')
    compilePolicy({ window: 1000, block: { for: 1000 } }, 'rateLimit')
    expect(warned()).toEqual([])
  })
})
