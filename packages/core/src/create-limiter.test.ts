import { describe, expect, it } from 'vitest'
import { ALGORITHMS, normalizeSpec, RATE_ALGORITHMS } from './algorithms'
import { ManualClock } from './clock'
import { createLimiter } from './create-limiter'
import type { LimiterSpec } from './types'

describe('createLimiter', () => {
  it.each<[LimiterSpec, string, number]>([
    [{ algorithm: 'token-bucket', limit: 10, capacity: 3 }, 'token-bucket', 3],
    [{ algorithm: 'leaky-bucket', limit: 10 }, 'leaky-bucket', 1],
    [{ algorithm: 'sliding-window', limit: 4, window: '1m', slots: 6 }, 'sliding-window', 4],
    [{ algorithm: 'fixed-window', limit: 5 }, 'fixed-window', 5],
    [{ algorithm: 'warm-up', limit: 12, warmUp: '1m' }, 'warm-up', 4],
    [{ algorithm: 'concurrency', max: 2 }, 'concurrency', 2],
  ])('builds %j', (spec, name, burst) => {
    const limiter = createLimiter(spec, new ManualClock())
    expect(limiter.name).toBe(name)
    let taken = 0
    while (taken < 100 && limiter.tryAcquire()) taken++
    expect(taken).toBe(burst)
  })

  it('uses the given clock', () => {
    const clock = new ManualClock()
    const limiter = createLimiter({ algorithm: 'leaky-bucket', limit: 10, name: 'pace' }, clock)
    expect(limiter.tryAcquire()).toBe(true)
    expect(limiter.tryAcquire()).toBe(false)
    clock.advance(100)
    expect(limiter.tryAcquire()).toBe(true)
    expect(limiter.name).toBe('pace')
  })

  it('lists every algorithm', () => {
    expect(ALGORITHMS).toEqual([
      'token-bucket',
      'leaky-bucket',
      'sliding-window',
      'fixed-window',
      'warm-up',
      'concurrency',
    ])
  })

  it('validates like the factories', () => {
    expect(() => createLimiter({ algorithm: 'token-bucket', limit: 0 })).toThrow(
      new RangeError('tokenBucket: "limit" must be a positive integer, got 0'),
    )
    expect(() => createLimiter({ algorithm: 'concurrency', max: 1, maxQueue: -1 })).toThrow(
      new RangeError('concurrency: "maxQueue" must be a non-negative integer or Infinity, got -1'),
    )
  })

  it('names an unknown algorithm', () => {
    expect(() => createLimiter({ algorithm: 'token_bucket', limit: 1 } as never)).toThrow(
      new TypeError(
        `createLimiter: "algorithm" must be one of 'token-bucket', 'leaky-bucket', 'sliding-window', 'fixed-window', 'warm-up', 'concurrency', got "token_bucket"`,
      ),
    )
    expect(() => createLimiter(null as never)).toThrow(
      new TypeError('createLimiter: spec must be an object, got null'),
    )
  })
})

describe('normalizeSpec', () => {
  it('fills in every default and turns durations into milliseconds', () => {
    expect(normalizeSpec({ algorithm: 'token-bucket', limit: 10, window: '1m' })).toEqual({
      algorithm: 'token-bucket',
      limit: 10,
      window: 60_000,
      capacity: 10,
    })
    expect(normalizeSpec({ algorithm: 'sliding-window', limit: 5, name: 'x' })).toEqual({
      algorithm: 'sliding-window',
      limit: 5,
      window: 1000,
      slots: 10,
    })
    expect(normalizeSpec({ algorithm: 'concurrency', max: 3 })).toEqual({
      algorithm: 'concurrency',
      max: 3,
      maxQueue: 0,
    })
  })

  it('names the caller and the option path, and refuses options of another algorithm', () => {
    expect(() =>
      normalizeSpec({ algorithm: 'fixed-window', limit: 2 ** 60 }, 'rateLimit', 'policies[1].'),
    ).toThrow(
      new RangeError(`rateLimit: "policies[1].limit" must be a positive integer, got ${2 ** 60}`),
    )
    expect(() =>
      normalizeSpec({ algorithm: 'fixed-window', limit: 2, slots: 4 } as never, 'rateLimit'),
    ).toThrow(new TypeError('rateLimit: unknown option "slots"'))
  })

  it('builds the same limiter from a normalized spec', () => {
    const spec = normalizeSpec({ algorithm: 'warm-up', limit: 12, warmUp: '1m' })
    expect(createLimiter(spec, new ManualClock()).availablePermits()).toBe(4)
    expect(RATE_ALGORITHMS).not.toContain('concurrency')
  })
})
