import type { Policy } from '@sluice/http'
import { describe, expect, it } from 'vitest'
import { encodePolicy } from './policies'

const timed = (spec: Policy['spec'], limit: number, windowMs: number): Policy => ({
  name: 'p',
  spec,
  limit,
  windowMs,
})
const HOUR = 3_600_000
const DAY = 24 * HOUR

describe('encodePolicy', () => {
  it.each<[string, Policy, string[]]>([
    [
      'token bucket: capacity defaults to limit, counted in µs',
      timed({ algorithm: 'token-bucket', limit: 100, window: 60_000 }, 100, 60_000),
      ['g', '100', '60000000', '100', '0', '1'],
    ],
    [
      'token bucket with a capacity',
      timed({ algorithm: 'token-bucket', limit: 10, window: 1_000, capacity: 3 }, 10, 1_000),
      ['g', '10', '1000000', '3', '0', '1'],
    ],
    [
      'leaky bucket: capacity 1',
      timed({ algorithm: 'leaky-bucket', limit: 7, window: 100 }, 7, 100),
      ['g', '7', '100000', '1', '0', '1'],
    ],
    [
      'warm-up: warm-up in µs',
      timed({ algorithm: 'warm-up', limit: 6, window: HOUR, warmUp: '2m' }, 6, HOUR),
      ['g', '6', String(HOUR * 1000), '6', '120000000', '1'],
    ],
    [
      'a million per day: counted in 10 µs units to stay below 2^53',
      timed({ algorithm: 'token-bucket', limit: 1_000_000, window: DAY }, 1_000_000, DAY),
      ['g', '1000000', String(DAY * 100), '1000000', '0', '10'],
    ],
    [
      'fixed window',
      timed({ algorithm: 'fixed-window', limit: 5, window: DAY }, 5, DAY),
      ['f', '5', String(DAY * 1000), '0', '0', '0'],
    ],
    [
      'sliding window: 10 slots by default',
      timed({ algorithm: 'sliding-window', limit: 5, window: 1_500 }, 5, 1_500),
      ['s', '5', '1500000', '10', '0', '0'],
    ],
    [
      'concurrency: the store-wide lease ttl',
      { name: 'p', spec: { algorithm: 'concurrency', max: 20 }, limit: 20, windowMs: 0 },
      ['c', '20', '60000000', '0', '0', '0'],
    ],
  ])('%s', (_, policy, encoded) => {
    expect(encodePolicy(policy, 60_000_000)).toEqual(encoded)
  })

  it('refuses a policy too large to count exactly', () => {
    const huge = timed({ algorithm: 'token-bucket', limit: 1e9, window: DAY }, 1e9, DAY)
    expect(() => encodePolicy(huge, 1)).toThrow(
      new RangeError(
        'redisStore: policy "p" is too large to count exactly: 1000000000 × window must be at most 2^53 µs (a window of whole milliseconds allows about 10^8 per day), got 1000000000 per 86400000 ms',
      ),
    )
  })

  it('refuses a window below one microsecond', () => {
    const tiny = timed({ algorithm: 'fixed-window', limit: 1, window: 0.0001 }, 1, 0.0001)
    expect(() => encodePolicy(tiny, 1)).toThrow(
      'redisStore: policy "p" needs a window of at least 1 µs, got 0.0001 ms',
    )
  })
})
