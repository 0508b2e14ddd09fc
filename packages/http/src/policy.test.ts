import { describe, expect, it } from 'vitest'
import { compilePolicies, concurrencyPolicy, type PoliciesOptions } from './policy'

describe('compilePolicies', () => {
  it('applies the defaults: sliding window, 100 per minute, named "default"', () => {
    expect(compilePolicies({}, 'rateLimit')).toEqual([
      {
        name: 'default',
        spec: { algorithm: 'sliding-window', name: 'default', limit: 100, window: 60_000 },
        limit: 100,
        windowMs: 60_000,
      },
    ])
  })

  it('turns durations into milliseconds and keeps algorithm options', () => {
    const [bucket] = compilePolicies(
      { algorithm: 'token-bucket', limit: 10, window: '1.5s', capacity: 20, name: 'api' },
      'rateLimit',
    )
    expect(bucket).toEqual({
      name: 'api',
      spec: { algorithm: 'token-bucket', name: 'api', limit: 10, window: 1500, capacity: 20 },
      limit: 10,
      windowMs: 1500,
    })
    const [warm] = compilePolicies({ algorithm: 'warm-up', limit: 5, warmUp: '2m' }, 'rateLimit')
    expect(warm?.spec).toEqual({
      algorithm: 'warm-up',
      name: 'default',
      limit: 5,
      window: 60_000,
      warmUp: 120_000,
    })
  })

  it('compiles a list of named policies', () => {
    const policies = compilePolicies(
      {
        policies: [
          { name: 'burst', limit: 10, window: '1s' },
          { name: 'daily', limit: 1000, window: '1d', algorithm: 'fixed-window' },
        ],
      },
      'rateLimit',
    )
    expect(policies.map((p) => [p.name, p.spec.algorithm, p.limit, p.windowMs])).toEqual([
      ['burst', 'sliding-window', 10, 1000],
      ['daily', 'fixed-window', 1000, 86_400_000],
    ])
  })

  it('names a lone policy in a list after the top-level name', () => {
    expect(compilePolicies({ name: 'api', policies: [{ limit: 1 }] }, 'rateLimit')[0]?.name).toBe(
      'api',
    )
  })

  const refusals: [string, PoliciesOptions, Error][] = [
    [
      'limit 0',
      { limit: 0 },
      new RangeError('rateLimit: "limit" must be a positive integer, got 0'),
    ],
    [
      'limit 1.5',
      { limit: 1.5 },
      new RangeError('rateLimit: "limit" must be a positive integer, got 1.5'),
    ],
    [
      'limit as text',
      { limit: '10' as unknown as number },
      new TypeError('rateLimit: "limit" must be a positive integer, got "10"'),
    ],
    [
      'a bad window',
      { window: '1 minute' as never },
      new RangeError(
        `rateLimit: "window" must be a duration (milliseconds as a non-negative number, or a string such as '250ms', '1.5s', '5m', '2h', '1d'), got "1 minute"`,
      ),
    ],
    [
      'a zero window',
      { window: 0 },
      new RangeError('rateLimit: "window" must be a positive duration, got 0'),
    ],
    [
      'an unknown algorithm',
      { algorithm: 'gcra' as never },
      new TypeError(
        `rateLimit: "algorithm" must be one of 'sliding-window', 'token-bucket', 'leaky-bucket', 'fixed-window', 'warm-up', got "gcra"`,
      ),
    ],
    [
      'concurrency as a rate',
      { algorithm: 'concurrency' as never },
      new TypeError(
        `rateLimit: "algorithm" must be one of 'sliding-window', 'token-bucket', 'leaky-bucket', 'fixed-window', 'warm-up', got "concurrency"`,
      ),
    ],
    [
      'an option of another algorithm',
      { algorithm: 'fixed-window', capacity: 5 },
      new TypeError(`rateLimit: "capacity" does not apply to algorithm 'fixed-window', got 5`),
    ],
    [
      'warm-up without warmUp',
      { algorithm: 'warm-up' },
      new TypeError(`rateLimit: "warmUp" is required by algorithm 'warm-up', got undefined`),
    ],
    [
      'an empty name',
      { name: '' },
      new TypeError('rateLimit: "name" must be a non-empty string, got ""'),
    ],
    [
      'a name with a newline',
      { name: 'a\nb' },
      new RangeError(
        'rateLimit: "name" must be printable ASCII (it is sent in headers), got "a\\nb"',
      ),
    ],
    [
      'an empty list',
      { policies: [] },
      new TypeError('rateLimit: "policies" must be a non-empty array, got an array'),
    ],
    [
      'limit beside policies',
      { limit: 5, policies: [{ limit: 1 }] },
      new TypeError(
        'rateLimit: "limit" cannot be combined with "policies" (give it inside each policy), got 5',
      ),
    ],
    [
      'unnamed policies',
      { policies: [{ name: 'a' }, { limit: 1 }] },
      new TypeError(
        'rateLimit: "policies[1].name" is required when there are several policies, got undefined',
      ),
    ],
    [
      'duplicate names',
      { policies: [{ name: 'a' }, { name: 'a' }] },
      new TypeError('rateLimit: "policies[1].name" must be unique, got "a"'),
    ],
    [
      'a bad policy entry',
      { policies: [{ name: 'a', limit: -1 }] },
      new RangeError('rateLimit: "policies[0].limit" must be a positive integer, got -1'),
    ],
  ]

  it.each(refusals)('refuses %s, naming the option', (_, options, error) => {
    expect(() => compilePolicies(options, 'rateLimit')).toThrow(error)
    try {
      compilePolicies(options, 'rateLimit')
    } catch (thrown) {
      expect(thrown).toBeInstanceOf(error.constructor)
    }
  })
})

describe('concurrencyPolicy', () => {
  it('describes a bulkhead as a concurrency spec without a window', () => {
    expect(concurrencyPolicy('bulkhead', 20)).toEqual({
      name: 'bulkhead',
      spec: { algorithm: 'concurrency', name: 'bulkhead', max: 20 },
      limit: 20,
      windowMs: 0,
    })
  })
})
