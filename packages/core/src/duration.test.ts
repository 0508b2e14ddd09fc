import { describe, expect, it } from 'vitest'
import { parseDuration } from './duration'
import type { Duration } from './types'

describe('parseDuration', () => {
  it.each<[Duration, number]>([
    [0, 0],
    [250, 250],
    [0.5, 0.5],
    ['0ms', 0],
    ['250ms', 250],
    ['1s', 1_000],
    ['1.5s', 1_500],
    ['0.29s', 290],
    ['.5s', 500],
    ['5m', 300_000],
    ['1.5m', 90_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['2.5ms', 2.5],
  ])('%j is %d ms', (input, ms) => {
    expect(parseDuration(input, 'window')).toBe(ms)
  })

  const rule =
    "must be a duration (milliseconds as a non-negative number, or a string such as '250ms', '1.5s', '5m', '2h', '1d')"

  it.each<[unknown, string]>([
    [-1, '-1'],
    [Number.NaN, 'NaN'],
    [Number.POSITIVE_INFINITY, 'Infinity'],
    ['', '""'],
    ['1', '"1"'],
    ['-1s', '"-1s"'],
    ['1e3ms', '"1e3ms"'],
    ['1.s', '"1.s"'],
    ['s', '"s"'],
    ['1 fortnight', '"1 fortnight"'],
    [null, 'null'],
    [undefined, 'undefined'],
    [{}, 'an object'],
    [[1000], 'an array'],
  ])('rejects %j with a RangeError naming the option', (input, shown) => {
    expect(() => parseDuration(input as Duration, 'tokenBucket: "window"')).toThrow(
      new RangeError(`tokenBucket: "window" ${rule}, got ${shown}`),
    )
  })

  it.each([
    ['1 minute', '1m'],
    ['30 Seconds', '30s'],
    ['1 s', '1s'],
    ['1sec', '1s'],
    ['1S', '1s'],
    ['1.5 min', '1.5m'],
    ['2 hours', '2h'],
    ['500 milliseconds', '500ms'],
    [' 1 day ', '1d'],
  ])('rejects %j and suggests %j', (input, suggested) => {
    expect(() => parseDuration(input as Duration, 'rateLimit: "window"')).toThrow(
      new RangeError(
        `rateLimit: "window" ${rule}, got ${JSON.stringify(input)} (did you mean '${suggested}'?)`,
      ),
    )
  })

  it('names the option "duration" when no label is given', () => {
    expect(() => parseDuration('soon' as Duration)).toThrow(`duration ${rule}, got "soon"`)
  })
})
