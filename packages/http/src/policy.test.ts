import type { Duration } from '@sluice/core'
import { memoryStore } from '@sluice/keyed'
import type { Policy } from '@sluice/keyed/store'
import {
  claimPolicies,
  compilePolicy,
  compilePolicyList,
  concurrencyPolicy,
  defaultName,
  formatDuration,
  makePolicy,
  type PolicyOptions,
  policyName,
} from '@sluice/keyed/store'
import { describe, expect, it } from 'vitest'
import { MetPolicies, type PoliciesOptions, PolicySource } from './policy'

describe('compilePolicy', () => {
  it('applies the defaults: sliding window, 100 per minute, named after its spec', () => {
    expect(compilePolicy({}, 'rateLimit')).toEqual({
      name: '100-per-1m',
      spec: { algorithm: 'sliding-window', limit: 100, window: 60_000, slots: 10 },
      id: '100-per-1m|sliding-window:100:60000:10',
      state: '100-per-1m|sliding-window',
      fingerprint: 'sliding-window:100:60000:10',
      carry: undefined,
      limit: 100,
      windowMs: 60_000,
      block: undefined,
    })
  })

  it('turns durations into milliseconds and keeps algorithm options', () => {
    expect(
      compilePolicy(
        { algorithm: 'token-bucket', limit: 10, window: '1.5s', capacity: 20, name: 'api' },
        'rateLimit',
      ),
    ).toEqual({
      name: 'api',
      spec: { algorithm: 'token-bucket', limit: 10, window: 1500, capacity: 20 },
      id: 'api|token-bucket:10:1500:20',
      state: 'api|token-bucket',
      fingerprint: 'token-bucket:10:1500:20',
      carry: undefined,
      limit: 10,
      windowMs: 1500,
      block: undefined,
    })
    expect(
      compilePolicy({ algorithm: 'warm-up', limit: 5, warmUp: '2m' }, 'rateLimit').spec,
    ).toEqual({ algorithm: 'warm-up', limit: 5, window: 60_000, capacity: 5, warmUp: 120_000 })
  })

  it('reads a penalty, with after defaulting to 1', () => {
    expect(compilePolicy({ limit: 5, block: { for: '15m' } }, 'rateLimit').block).toEqual({
      forMs: 900_000,
      after: 1,
    })
    expect(compilePolicy({ limit: 5, block: { for: 2_000, after: 3 } }, 'rateLimit')).toMatchObject(
      {
        name: '5-per-1m-block-2s-after-3',
        id: '5-per-1m-block-2s-after-3|sliding-window:5:60000:10:block:2000:3',
        block: { forMs: 2_000, after: 3 },
      },
    )
  })
})

describe('compilePolicyList', () => {
  it('compiles a list in order, each named as given or after its spec', () => {
    const policies = compilePolicyList(
      [
        { name: 'burst', limit: 10, window: '1s' },
        { limit: 1000, window: '1d', algorithm: 'fixed-window' },
      ],
      'rateLimit',
    )
    expect(policies.map((p) => [p.name, p.spec.algorithm, p.limit, p.windowMs])).toEqual([
      ['burst', 'sliding-window', 10, 1000],
      ['1000-per-1d-fixed-window', 'fixed-window', 1000, 86_400_000],
    ])
  })

  it('refuses two entries that end up with one name, naming the entry', () => {
    expect(() => compilePolicyList([{ limit: 1 }, { limit: 1 }], 'rateLimit')).toThrow(
      new TypeError(
        'rateLimit: "policies[1].name" must be unique among the policies, got "1-per-1m"',
      ),
    )
  })
})

describe('defaultName', () => {
  const named = (options: PolicyOptions) => compilePolicy(options, 'test').name

  it.each<[PolicyOptions, string]>([
    [{}, '100-per-1m'],
    [{ limit: 10, window: '1s' }, '10-per-1s'],
    [{ limit: 10, window: 1500 }, '10-per-1500ms'],
    [{ limit: 10, window: '90s' }, '10-per-90s'],
    [{ limit: 10, window: '36h' }, '10-per-36h'],
    [{ limit: 100, window: '1m', slots: 20 }, '100-per-1m-20-slots'],
    [{ algorithm: 'fixed-window', limit: 100, window: '1m' }, '100-per-1m-fixed-window'],
    [{ algorithm: 'leaky-bucket', limit: 10, window: '1s' }, '10-per-1s-leaky-bucket'],
    [{ algorithm: 'token-bucket', limit: 10, window: '1s' }, '10-per-1s-token-bucket'],
    [
      { algorithm: 'token-bucket', limit: 10, window: '1s', capacity: 20 },
      '10-per-1s-token-bucket-burst-20',
    ],
    [{ algorithm: 'warm-up', limit: 5, warmUp: '2m' }, '5-per-1m-warm-up-2m'],
    [
      { algorithm: 'warm-up', limit: 5, warmUp: '2m', capacity: 10 },
      '5-per-1m-warm-up-2m-burst-10',
    ],
    [{ limit: 5, block: { for: '15m' } }, '5-per-1m-block-15m'],
    [{ limit: 5, block: { for: '15m', after: 3 } }, '5-per-1m-block-15m-after-3'],
  ])('%j is named %s', (options, name) => {
    expect(named(options)).toBe(name)
  })

  it('tells apart every two unnamed policies that count differently', () => {
    const variants: PolicyOptions[] = [
      {},
      { slots: 20 },
      { algorithm: 'fixed-window' },
      { algorithm: 'leaky-bucket' },
      { algorithm: 'token-bucket' },
      { algorithm: 'token-bucket', capacity: 200 },
      { algorithm: 'warm-up', warmUp: '1m' },
      { algorithm: 'warm-up', warmUp: '2m' },
      { block: { for: '1m' } },
      { block: { for: '1m', after: 2 } },
    ]
    const names = variants.map(named)
    expect(new Set(names).size).toBe(variants.length)
  })

  it('names a concurrency spec after its size', () => {
    expect(defaultName({ algorithm: 'concurrency', max: 20, maxQueue: 0 }, undefined)).toBe(
      '20-concurrent',
    )
  })
})

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [250, '250ms'],
    [1000, '1s'],
    [1500, '1500ms'],
    [60_000, '1m'],
    [90_000, '90s'],
    [3_600_000, '1h'],
    [5_400_000, '90m'],
    [86_400_000, '1d'],
    [129_600_000, '36h'],
    [604_800_000, '7d'],
  ])('%d ms is %s, never rounded', (ms, text) => {
    expect(formatDuration(ms)).toBe(text)
  })
})

describe('policyName', () => {
  it('accepts printable ASCII up to 128 characters', () => {
    expect(policyName('rateLimit', 'name', 'x'.repeat(128))).toBe('x'.repeat(128))
    expect(policyName('rateLimit', 'name', 'a "quoted" \\ name')).toBe('a "quoted" \\ name')
  })

  it('refuses anything else, naming the option', () => {
    expect(() => policyName('rateLimit', 'policies[0].name', 'x'.repeat(129))).toThrow(RangeError)
    expect(() => policyName('rateLimit', 'policies[0].name', 'x'.repeat(129))).toThrow(
      /^rateLimit: "policies\[0\]\.name" must be at most 128 characters, got "x+\.\.\."$/,
    )
    expect(() => policyName('bulkhead', 'name', 'café')).toThrow(
      new RangeError(
        'bulkhead: "name" must be printable ASCII (it is sent in headers), got "café"',
      ),
    )
    expect(() => policyName('bulkhead', 'name', 7)).toThrow(
      new TypeError('bulkhead: "name" must be a non-empty string, got 7'),
    )
  })
})

describe('makePolicy', () => {
  it('keys state by name and spec: equal for equal policies, different otherwise', () => {
    const a = compilePolicy({ name: 'api', limit: 10, window: '1s' }, 'test')
    const again = compilePolicy({ name: 'api', limit: 10, window: 1000, slots: 10 }, 'test')
    const renamed = compilePolicy({ name: 'web', limit: 10, window: '1s' }, 'test')
    const resized = compilePolicy({ name: 'api', limit: 11, window: '1s' }, 'test')
    expect(again.id).toBe(a.id)
    expect(new Set([a.id, renamed.id, resized.id]).size).toBe(3)
    expect(makePolicy(a.spec, 'api').id).toBe(a.id)
    expect(makePolicy(a.spec, 'api', { forMs: 1000, after: 1 }).id).toBe(
      'api|sliding-window:10:1000:10:block:1000:1',
    )
  })
})

describe('concurrencyPolicy', () => {
  it('describes a bulkhead as a concurrency spec without a window', () => {
    expect(concurrencyPolicy('bulkhead', 20)).toEqual({
      name: 'bulkhead',
      spec: { algorithm: 'concurrency', max: 20, maxQueue: 0 },
      id: 'bulkhead|concurrency:20:0',
      state: 'bulkhead|concurrency',
      fingerprint: 'concurrency:20:0',
      carry: undefined,
      limit: 20,
      windowMs: 0,
      block: undefined,
    })
  })

  it("is named '<max>-concurrent' when unnamed", () => {
    expect(concurrencyPolicy(undefined, 4)).toMatchObject({
      name: '4-concurrent',
      id: '4-concurrent|concurrency:4:0',
    })
  })
})

describe('PolicySource', () => {
  it('a fixed source compiles once and resolves to the same array for every request', () => {
    const source = new PolicySource({ limit: 10, window: '1s' }, 'rateLimit')
    expect(source.fixed?.map((p) => p.name)).toEqual(['10-per-1s'])
    expect(source.resolve({})).toBe(source.fixed)
    expect(source.resolve({})).toBe(source.fixed)
  })

  it('a list of policies is fixed too', () => {
    const source = new PolicySource(
      {
        policies: [
          { name: 'burst', limit: 10, window: '1s' },
          { limit: 1000, window: '1d' },
        ],
      },
      'rateLimit',
    )
    expect(source.fixed?.map((p) => p.name)).toEqual(['burst', '1000-per-1d'])
  })

  it('a limit function compiles once per distinct value, keeping the other options', () => {
    const source = new PolicySource<{ plan: string }>(
      {
        algorithm: 'fixed-window',
        window: '1h',
        limit: (req: { plan: string }) => (req.plan === 'pro' ? 1000 : 100),
      } as PoliciesOptions,
      'rateLimit',
    )
    expect(source.fixed).toBeUndefined()
    const free = source.resolve({ plan: 'free' }) as readonly Policy[]
    const pro = source.resolve({ plan: 'pro' }) as readonly Policy[]
    expect(free.map((p) => p.name)).toEqual(['100-per-1h-fixed-window'])
    expect(pro.map((p) => p.name)).toEqual(['1000-per-1h-fixed-window'])
    expect(source.resolve({ plan: 'free' })).toBe(free)
    expect(source.resolve({ plan: 'pro' })).toBe(pro)
  })

  it('an async limit function resolves to the cached policies', async () => {
    const source = new PolicySource({ limit: async () => 5 } as PoliciesOptions, 'rateLimit')
    const first = await source.resolve({})
    expect(first.map((p) => p.name)).toEqual(['5-per-1m'])
    expect(await source.resolve({})).toBe(first)
  })

  it('a policies function is cached by array identity and by value', () => {
    const plans = {
      free: [{ limit: 10, window: '1m' }],
      pro: [
        { name: 'pro', limit: 100, window: '1m' },
        { limit: 10_000, window: '1d' },
      ],
    } satisfies Record<string, PolicyOptions[]>
    let calls = 0
    const source = new PolicySource<{ plan: 'free' | 'pro' | 'fresh' }>(
      {
        policies: ((req: { plan: 'free' | 'pro' | 'fresh' }) => {
          calls++
          // 'fresh' returns a new array every time, equal in value to the free plan's.
          return req.plan === 'fresh' ? [{ limit: 10, window: '1m' }] : plans[req.plan]
        }) as never,
      },
      'rateLimit',
    )
    const free = source.resolve({ plan: 'free' })
    expect(source.resolve({ plan: 'free' })).toBe(free)
    expect(source.resolve({ plan: 'fresh' })).toBe(free)
    expect(source.resolve({ plan: 'fresh' })).toBe(free)
    const pro = source.resolve({ plan: 'pro' }) as readonly Policy[]
    expect(pro.map((p) => p.name)).toEqual(['pro', '10000-per-1d'])
    expect(calls).toBe(5)
  })

  it('keeps at most 1000 distinct compiled values, dropping the oldest first', () => {
    const source = new PolicySource({ limit: (n: number) => n } as PoliciesOptions, 'rateLimit')
    const first = source.resolve(1)
    const second = source.resolve(2)
    for (let n = 3; n <= 1001; n++) source.resolve(n)
    // 1 was the oldest of 1001 values: compiled again, to an equal but new array.
    const again = source.resolve(1)
    expect(again).not.toBe(first)
    expect(again).toEqual(first)
    // ...which in turn pushed out 2.
    expect(source.resolve(2)).not.toBe(second)
    expect(source.resolve(1001)).toBe(source.resolve(1001))
  })

  // Issue 24: rateLimit({ window: 1e-300 }) only warned, then spun on its first decision.
  it('refuses a window below one microsecond in every spelling, at construction or on use', () => {
    const refused = new RangeError(
      'rateLimit: "window" must be at least one microsecond (0.001 ms), got 1e-300',
    )
    expect(() => new PolicySource({ window: 1e-300 }, 'rateLimit')).toThrow(refused)
    expect(() => new PolicySource({ limit: () => 5, window: 1e-300 }, 'rateLimit')).toThrow(refused)
    expect(
      () => new PolicySource({ policies: [{ limit: 1 }, { window: 1e-15 }] }, 'rateLimit'),
    ).toThrow(
      new RangeError(
        'rateLimit: "policies[1].window" must be at least one microsecond (0.001 ms), got 1e-15',
      ),
    )
    const picked = new PolicySource(
      { policies: (() => [{ window: 1e-300 }]) as never },
      'rateLimit',
    )
    expect(() => picked.resolve({})).toThrow(
      new RangeError(
        'rateLimit: "policies()[0].window" must be at least one microsecond (0.001 ms), got 1e-300',
      ),
    )
  })

  it('refuses what a function returns only when it is used, naming the option', async () => {
    const limit = new PolicySource({ limit: (v: unknown) => v } as PoliciesOptions, 'rateLimit')
    expect(() => limit.resolve('10')).toThrow(
      new TypeError('rateLimit: "limit" must return a positive integer, got "10"'),
    )
    expect(() => limit.resolve(0)).toThrow(
      new RangeError('rateLimit: "limit" must be a positive integer, got 0'),
    )
    const policies = new PolicySource({ policies: (async (v: unknown) => v) as never }, 'rateLimit')
    await expect(policies.resolve([])).rejects.toThrow(
      new TypeError('rateLimit: "policies()" must be a non-empty array, got an array'),
    )
    await expect(policies.resolve([{ limit: -1 }])).rejects.toThrow(
      new RangeError('rateLimit: "policies()[0].limit" must be a positive integer, got -1'),
    )
    // A value that failed is not cached: the next request with it fails the same way.
    expect(() => limit.resolve(0)).toThrow(RangeError)
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
        `rateLimit: "window" must be a duration (milliseconds as a non-negative number, or a string such as '250ms', '1.5s', '5m', '2h', '1d'), got "1 minute" (did you mean '1m'?)`,
      ),
    ],
    [
      'a bad window beside a limit function',
      { limit: () => 1, window: '1 minute' as never },
      new RangeError(
        `rateLimit: "window" must be a duration (milliseconds as a non-negative number, or a string such as '250ms', '1.5s', '5m', '2h', '1d'), got "1 minute" (did you mean '1m'?)`,
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
        `rateLimit: "algorithm" must be one of 'token-bucket', 'leaky-bucket', 'sliding-window', 'fixed-window', 'warm-up', got "gcra"`,
      ),
    ],
    [
      'concurrency as a rate',
      { algorithm: 'concurrency' as never },
      new TypeError(
        `rateLimit: "algorithm" must be one of 'token-bucket', 'leaky-bucket', 'sliding-window', 'fixed-window', 'warm-up', got "concurrency"`,
      ),
    ],
    [
      'an option of another algorithm',
      { algorithm: 'fixed-window', capacity: 5 },
      new RangeError(`rateLimit: "capacity" does not apply to algorithm 'fixed-window', got 5`),
    ],
    [
      'warm-up without warmUp',
      { algorithm: 'warm-up' },
      new TypeError(`rateLimit: "warmUp" is required (a duration such as '30s'), got undefined`),
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
      'a block without for',
      { block: {} as never },
      new TypeError('rateLimit: "block.for" is required, got undefined'),
    ],
    [
      'a zero block',
      { block: { for: 0 } },
      new RangeError('rateLimit: "block.for" must be a positive duration, got 0'),
    ],
    [
      'block after 0',
      { block: { for: '1s', after: 0 } },
      new RangeError('rateLimit: "block.after" must be a positive integer, got 0'),
    ],
    [
      'an unknown block option',
      { block: { for: '1s', duration: 5 } as never },
      new TypeError('rateLimit: "block": unknown option "duration"'),
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
      'a name beside policies',
      { name: 'api', policies: [{ limit: 1 }] },
      new TypeError(
        'rateLimit: "name" cannot be combined with "policies" (give it inside each policy), got "api"',
      ),
    ],
    [
      'duplicate names',
      { policies: [{ name: 'a' }, { name: 'a' }] },
      new TypeError('rateLimit: "policies[1].name" must be unique among the policies, got "a"'),
    ],
    [
      'a bad policy entry',
      { policies: [{ name: 'a', limit: -1 }] },
      new RangeError('rateLimit: "policies[0].limit" must be a positive integer, got -1'),
    ],
    [
      'an entry that is no object',
      { policies: [5 as never] },
      new TypeError('rateLimit: "policies[0]" must be an object, got 5'),
    ],
    [
      'an unknown option in an entry',
      { policies: [{ limit: 1, windowMs: 5 } as never] },
      new TypeError('rateLimit: unknown option "windowMs" (did you mean "window"?)'),
    ],
  ]

  it.each(refusals)('refuses %s at construction, naming the option', (_, options, error) => {
    let thrown: unknown
    try {
      new PolicySource(options, 'rateLimit')
    } catch (e) {
      thrown = e
    }
    expect(thrown).toBeInstanceOf(error.constructor)
    expect(thrown).toEqual(error)
  })
})

describe('claimPolicies', () => {
  const api = (limit: number, window: Duration) =>
    compilePolicy({ name: 'api', limit, window }, 'rateLimit')

  it('refuses one name for two algorithms on one store, naming both', () => {
    const store = memoryStore()
    claimPolicies(store, [api(100, '1m')], 'rateLimit')
    const bucket = compilePolicy(
      { name: 'api', algorithm: 'token-bucket', limit: 10, window: '1s' },
      'rateLimit',
    )
    expect(() => claimPolicies(store, [bucket], 'bulkhead')).toThrow(
      new TypeError(
        'bulkhead: policy "api" (token-bucket 10 per 1s) shares its name with policy "api" (sliding-window 100 per 1m) of an earlier rateLimit on the same store, of another algorithm; give one of them another name (a spec of the same algorithm would carry the state over)',
      ),
    )
    expect(() => claimPolicies(store, [concurrencyPolicy('api', 5)], 'bulkhead')).toThrow(
      'bulkhead: policy "api" (concurrency 5) shares its name with policy "api" (sliding-window 100 per 1m)',
    )
  })

  it('takes another spec of the same algorithm under a name as a reconfiguration: the last one claimed is recorded', () => {
    const store = memoryStore()
    claimPolicies(store, [api(100, '1m')], 'rateLimit')
    expect(() => claimPolicies(store, [api(10, '1s')], 'rateLimit')).not.toThrow()
    const blocked = compilePolicy(
      { name: 'api', limit: 100, window: '1m', block: { for: '5m' } },
      'rateLimit',
    )
    expect(() => claimPolicies(store, [blocked], 'rateLimit')).not.toThrow()
    // The message names the spec claimed last.
    expect(() => claimPolicies(store, [concurrencyPolicy('api', 5)], 'bulkhead')).toThrow(
      'shares its name with policy "api" (sliding-window 100 per 1m, block 5m) of an earlier rateLimit',
    )
  })

  it('lets the same spec be claimed twice, and the same name on another store', () => {
    const store = memoryStore()
    claimPolicies(store, [api(100, '1m')], 'rateLimit')
    expect(() => claimPolicies(store, [api(100, '1m')], 'rateLimit')).not.toThrow()
    expect(() => claimPolicies(memoryStore(), [api(10, '1s')], 'rateLimit')).not.toThrow()
  })

  it('claims nothing from a list it refuses', () => {
    const store = memoryStore()
    claimPolicies(store, [api(100, '1m')], 'rateLimit')
    const web = compilePolicy({ name: 'web', limit: 5, window: '1s' }, 'rateLimit')
    const bucket = compilePolicy(
      { name: 'api', algorithm: 'token-bucket', limit: 10, window: '1s' },
      'rateLimit',
    )
    expect(() => claimPolicies(store, [web, bucket], 'rateLimit')).toThrow(TypeError)
    // 'web' was not recorded by the refused list, so another algorithm may still take the name.
    const otherWeb = compilePolicy(
      { name: 'web', algorithm: 'fixed-window', limit: 50, window: '1s' },
      'rateLimit',
    )
    expect(() => claimPolicies(store, [otherWeb], 'rateLimit')).not.toThrow()
  })
})

describe('MetPolicies', () => {
  const plan = (limit: number, options: PolicyOptions = {}) => [
    compilePolicy({ limit, window: '1m', ...options }, 'rateLimit'),
  ]

  it('keeps every policy met while its state may last, however many, and drops those surely fresh', () => {
    const met = new MetPolicies()
    for (let n = 1; n <= 1100; n++) met.met(plan(n), 0)
    // More than the 1,000 a middleware keeps compiled: every one is still there.
    expect(met.list().map((p) => p.limit)).toEqual(Array.from({ length: 1100 }, (_, i) => i + 1))
    met.met(plan(1), 60_000)
    // A sliding window of 1 minute is surely fresh 3 minutes after its last take: at
    // 180 s every plan met at 0 goes, once enough new ones (2,000 in all) call for a look.
    for (let n = 1101; n <= 2000; n++) met.met(plan(n), 180_000)
    expect(met.list().length).toBe(901)
    expect(met.list()[0]?.limit).toBe(1)
    expect(met.named('1-per-1m')?.limit).toBe(1)
    expect(met.named('2-per-1m')).toBeUndefined()
  })

  it('keeps one policy per name, the latest spec; a block and debt make it last longer', () => {
    const met = new MetPolicies()
    const api = (limit: number) => [
      compilePolicy({ name: 'api', limit, window: '1m', algorithm: 'token-bucket' }, 'rateLimit'),
    ]
    met.met(api(10), 0)
    met.met(api(20), 0)
    expect(met.list().map((p) => [p.name, p.limit])).toEqual([['api', 20]])
    // 1,000 permits of debt at 3 s each (20 a minute): 3,000 s more than the 3 minutes.
    met.owe(api(20), [1000], 0)
    met.met(plan(5, { block: { for: '1h' } }), 0)
    for (let n = 1; n <= 998; n++) met.met(plan(1000 + n), 0)
    for (let n = 1; n <= 1000; n++) met.met(plan(5000 + n), 3_179_999)
    expect(met.named('api')?.limit).toBe(20)
    expect(met.named('5-per-1m-block-1h')?.limit).toBe(5)
    expect(met.list().length).toBe(1002)
  })
})
