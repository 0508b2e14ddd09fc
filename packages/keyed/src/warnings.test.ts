import * as core from '@sluice/core/internal'
import { describe, expect, it } from 'vitest'
import { keyedLimiter } from './keyed-limiter'
import { compilePolicy, compilePolicyList, type PolicyOptions } from './policy'
import { warningsOf } from './testing'
import * as keyed from './warnings'
import { warnIfBareMilliseconds } from './warnings'

const help = (code: string) =>
  `(see https://github.com/sluice-js/sluice/blob/main/docs/warnings/${code}.md)`

describe('warnIfBareMilliseconds', () => {
  it('warns once about a bare number under 1000, saying what to write', () => {
    expect(
      warningsOf(() => {
        warnIfBareMilliseconds('bulkhead', 'queueTimeout', 5)
        warnIfBareMilliseconds('bulkhead', 'queueTimeout', 5)
      }),
    ).toEqual([
      [
        'ERR_SLUICE_DURATION_IN_MS',
        `bulkhead: "queueTimeout" is 5, which is 5 milliseconds, not seconds. Write '5s' if you meant seconds, or '5ms' to silence this. ${help('ERR_SLUICE_DURATION_IN_MS')}`,
      ],
    ])
  })

  it('gives a window its own code', () => {
    const given = warningsOf(() => {
      warnIfBareMilliseconds('rateLimit', 'window', 60)
      warnIfBareMilliseconds('rateLimit', 'policies[1].window', 999)
      warnIfBareMilliseconds('rateLimit', 'windowed', 60)
    })
    expect(given.map(([code]) => code)).toEqual([
      'ERR_SLUICE_WINDOW_IN_MS',
      'ERR_SLUICE_WINDOW_IN_MS',
      'ERR_SLUICE_DURATION_IN_MS',
    ])
  })

  it('leaves strings, zero, 1000 and more, and absent or invalid values alone', () => {
    const values = ['5s', '250ms', 0, 1000, 60_000, undefined, null, -5, Number.NaN]
    expect(
      warningsOf(() => {
        for (const value of values) warnIfBareMilliseconds('bulkhead', 'queueTimeout', value)
      }),
    ).toEqual([])
  })
})

describe('policy durations in bare milliseconds', () => {
  it.each<[PolicyOptions, string, string]>([
    [{ window: 60 }, 'window', 'ERR_SLUICE_WINDOW_IN_MS'],
    [{ block: { for: 60 } }, 'block.for', 'ERR_SLUICE_DURATION_IN_MS'],
    [{ algorithm: 'warm-up', window: '1s', warmUp: 120 }, 'warmUp', 'ERR_SLUICE_DURATION_IN_MS'],
  ])('%j warns about "%s"', (options, option, code) => {
    expect(warningsOf(() => compilePolicy(options, 'rateLimit'))).toEqual([
      [code, expect.stringContaining(`rateLimit: "${option}" is `)],
    ])
  })

  it('names the entry of a list', () => {
    const list = [{ limit: 1 }, { name: 'ban', limit: 2, block: { for: 30 } }]
    expect(warningsOf(() => compilePolicyList(list, 'rateLimit'))).toEqual([
      [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining(
          'rateLimit: "policies[1].block.for" is 30, which is 30 milliseconds',
        ),
      ],
    ])
  })

  it('is quiet with units, or with 1000 and more', () => {
    expect(
      warningsOf(() => {
        compilePolicy({ window: '60s', block: { for: '60s' } }, 'rateLimit')
        compilePolicy({ algorithm: 'warm-up', window: 60_000, warmUp: '2m' }, 'rateLimit')
        compilePolicy({ window: 1000, block: { for: 1000 } }, 'rateLimit')
      }),
    ).toEqual([])
  })
})

describe('one implementation, in @sluice/core', () => {
  it("re-exports core's warnings, so both share one list of warnings given", () => {
    expect(keyed.emitWarning).toBe(core.emitWarning)
    expect(keyed.warnIfBareMilliseconds).toBe(core.warnIfBareMilliseconds)
    expect(keyed.forgetWarnings).toBe(core.forgetWarnings)
  })

  it("a bare window read by the keyed limiter and by core's normalizeSpec warns once", () => {
    expect(
      warningsOf(() => {
        keyedLimiter({ limit: 5, window: 60 })
        keyedLimiter({ algorithm: 'warm-up', limit: 5, window: '1m', warmUp: 90 })
      }),
    ).toEqual([
      [
        'ERR_SLUICE_WINDOW_IN_MS',
        `keyedLimiter: "window" is 60, which is 60 milliseconds, not seconds. Write '60s' if you meant seconds, or '60ms' to silence this. ${help('ERR_SLUICE_WINDOW_IN_MS')}`,
      ],
      [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining('keyedLimiter: "warmUp" is 90, which is 90 milliseconds'),
      ],
    ])
  })
})

describe('keyed limiter durations in bare milliseconds', () => {
  it('warns about "reservationTtl" and block(key, duration), counted in ms unlike rate-limiter-flexible', () => {
    const given = warningsOf(() => {
      const limiter = keyedLimiter({ limit: 5, window: '1m', reservationTtl: 600 })
      limiter.block('user:1', 30)
      keyedLimiter({ limit: 5, window: '1m', reservationTtl: '10m' }).block('user:1', '30s')
    })
    expect(given).toEqual([
      [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining('keyedLimiter: "reservationTtl" is 600, which is 600 milliseconds'),
      ],
      [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining('keyedLimiter.block: "duration" is 30, which is 30 milliseconds'),
      ],
    ])
  })
})
