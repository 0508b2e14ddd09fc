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
    ['1 s', '"1 s"'],
    ['1sec', '"1sec"'],
    ['-1s', '"-1s"'],
    ['1e3ms', '"1e3ms"'],
    ['1.s', '"1.s"'],
    ['s', '"s"'],
    ['1S', '"1S"'],
    [null, 'null'],
    [undefined, 'undefined'],
    [{}, 'an object'],
    [[1000], 'an array'],
  ])('rejects %j with a RangeError naming the option', (input, shown) => {
    expect(() => parseDuration(input as Duration, 'tokenBucket: "window"')).toThrow(
      new RangeError(`tokenBucket: "window" ${rule}, got ${shown}`),
    )
  })

  it('names the option "duration" when no label is given', () => {
    expect(() => parseDuration('soon' as Duration)).toThrow(`duration ${rule}, got "soon"`)
  })
})
