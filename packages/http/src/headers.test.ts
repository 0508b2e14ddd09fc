import { ManualClock } from '@sluice/core'
import { memoryStore } from '@sluice/keyed'
import type { Policy } from '@sluice/keyed/store'
import {
  compilePolicy,
  compilePolicyList,
  concurrencyPolicy,
  type PolicyOptions,
} from '@sluice/keyed/store'
import { describe, expect, it } from 'vitest'
import type { ResponseAccessors } from './accessors'
import { createHeaderWriter, type HeaderMode, retryAfterSeconds, toSeconds } from './headers'
import { decision } from './rate-limit-engine'

type FakeResponse = Map<string, string>

const response: ResponseAccessors<unknown, FakeResponse> = {
  getHeader: (res, name) => res.get(name.toLowerCase()),
  setHeader: (res, name, value) =>
    void res.set(name.toLowerCase(), `${name}: ${value}`.slice(name.length + 2)),
  signal: () => new AbortController().signal,
}

function compiled(options: PolicyOptions | readonly PolicyOptions[] | readonly Policy[]) {
  if (!Array.isArray(options)) return [compilePolicy(options as PolicyOptions, 'test')]
  if (options.every((p) => 'id' in p)) return options as readonly Policy[]
  return compilePolicyList(options as readonly PolicyOptions[], 'test')
}

/** Runs `takes` requests through a fresh store and writes the last decision's headers. */
function headersAfter(
  mode: HeaderMode,
  options: PolicyOptions | readonly PolicyOptions[] | readonly Policy[],
  takes: number,
  advanceMs = 0,
  res: FakeResponse = new Map(),
) {
  const clock = new ManualClock()
  const store = memoryStore({ clock })
  const policies = compiled(options)
  for (let i = 1; i < takes; i++) store.take('k', policies, 1)
  clock.advance(advanceMs)
  const decided = decision(store.take('k', policies, 1), 'k', 1)
  createHeaderWriter(mode, policies, 'test')?.write(res, response, decided)
  return Object.fromEntries(res)
}

describe('header writers', () => {
  it("'draft-8' writes the IETF structured lists, named after the spec by default", () => {
    expect(
      headersAfter('draft-8', { limit: 100, window: '1m', algorithm: 'fixed-window' }, 43, 48_000),
    ).toEqual({
      'ratelimit-policy': '"100-per-1m-fixed-window";q=100;w=60',
      ratelimit: '"100-per-1m-fixed-window";r=57;t=12',
    })
  })

  it("'draft-8' lists each policy, in order", () => {
    const options: PolicyOptions[] = [
      { name: 'burst', limit: 10, window: '1s', algorithm: 'fixed-window' },
      { name: 'daily', limit: 1000, window: '1d', algorithm: 'fixed-window' },
    ]
    expect(headersAfter('draft-8', options, 3)).toEqual({
      'ratelimit-policy': '"burst";q=10;w=1, "daily";q=1000;w=86400',
      ratelimit: '"burst";r=7;t=1, "daily";r=997;t=86400',
    })
  })

  // Draft -10: t is the time until more quota becomes available, not until the policy is
  // full again. A token bucket of 10 per minute frees one permit every 6 s.
  it.each<[string, PolicyOptions, number, string]>([
    [
      'a token bucket: one more token',
      { algorithm: 'token-bucket', limit: 10, window: '1m' },
      3,
      'r=7;t=6',
    ],
    [
      'a leaky bucket: the next drip',
      { algorithm: 'leaky-bucket', limit: 10, window: '1m' },
      1,
      'r=0;t=6',
    ],
    [
      'a fixed window: the window end',
      { algorithm: 'fixed-window', limit: 10, window: '1m' },
      3,
      'r=7;t=60',
    ],
    // The oldest slot leaves the window once all of it is out: 6 s slots, so 66 s.
    ['a sliding window: the oldest slot out', { limit: 10, window: '1m' }, 3, 'r=7;t=66'],
    ['a full policy: 0', { algorithm: 'fixed-window', limit: 10, window: '1m' }, 0, 'r=10;t=0'],
  ])("'draft-8' t is the seconds until more quota: %s", (_, options, takes, item) => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const [policy] = compiled({ ...options, name: 'p' })
    for (let i = 0; i < takes; i++) store.take('k', [policy!], 1)
    const decided = decision({ allowed: true, results: store.get('k', [policy!]) }, 'k', 1)
    const res: FakeResponse = new Map()
    createHeaderWriter('draft-8', [policy!], 'test')?.write(res, response, decided)
    expect(res.get('ratelimit')).toBe(`"p";${item}`)
  })

  it("'draft-8' appends to values another middleware set, never clobbering them", () => {
    const res: FakeResponse = new Map([
      ['ratelimit-policy', '"global";q=1000;w=60'],
      ['ratelimit', '"global";r=999;t=60'],
    ])
    expect(
      headersAfter(
        'draft-8',
        { name: 'route', limit: 5, window: '1s', algorithm: 'fixed-window' },
        1,
        0,
        res,
      ),
    ).toEqual({
      'ratelimit-policy': '"global";q=1000;w=60, "route";q=5;w=1',
      ratelimit: '"global";r=999;t=60, "route";r=4;t=1',
    })
  })

  it("'draft-8' marks a bulkhead's quota unit and sends no reset for it", () => {
    expect(headersAfter('draft-8', [concurrencyPolicy(undefined, 20)], 3)).toEqual({
      'ratelimit-policy': '"20-concurrent";q=20;qu="concurrent-requests"',
      ratelimit: '"20-concurrent";r=17',
    })
  })

  it("'draft-8' escapes quotes and backslashes in policy names", () => {
    expect(
      headersAfter('draft-8', { name: 'a"b\\c', limit: 1, window: '1s' }, 1)['ratelimit-policy'],
    ).toBe('"a\\"b\\\\c";q=1;w=1')
  })

  it('clamps counts to the 15 digits a structured-field integer may have', () => {
    expect(
      headersAfter(
        'draft-8',
        { name: 'huge', algorithm: 'fixed-window', limit: 2e15, window: '1m' },
        1,
      ),
    ).toEqual({
      'ratelimit-policy': '"huge";q=999999999999999;w=60',
      ratelimit: '"huge";r=999999999999999;t=60',
    })
    expect(
      headersAfter('legacy', { algorithm: 'fixed-window', limit: 2e15, window: '1m' }, 1),
    ).toEqual({
      'x-ratelimit-limit': '999999999999999',
      'x-ratelimit-remaining': '999999999999999',
      'x-ratelimit-reset': '60',
    })
  })

  it("'draft-7' writes one RateLimit item and the policy list", () => {
    expect(
      headersAfter('draft-7', { limit: 100, window: '1m', algorithm: 'fixed-window' }, 43, 48_000),
    ).toEqual({
      ratelimit: 'limit=100, remaining=57, reset=12',
      'ratelimit-policy': '100;w=60',
    })
  })

  it("'draft-7' shows the tightest policy and lists all", () => {
    const options: PolicyOptions[] = [
      { name: 'daily', limit: 1000, window: '1d', algorithm: 'fixed-window' },
      { name: 'burst', limit: 10, window: '1s', algorithm: 'fixed-window' },
    ]
    expect(headersAfter('draft-7', options, 3)).toEqual({
      ratelimit: 'limit=10, remaining=7, reset=1',
      'ratelimit-policy': '1000;w=86400, 10;w=1',
    })
  })

  it("'draft-7' and 'draft-6' list policies of equal quota once: the longest window", () => {
    const options: PolicyOptions[] = [
      { name: 'minute', limit: 100, window: '1m', algorithm: 'fixed-window' },
      { name: 'hour', limit: 100, window: '1h', algorithm: 'fixed-window' },
      { name: 'burst', limit: 10, window: '1s', algorithm: 'fixed-window' },
    ]
    expect(headersAfter('draft-7', options, 1)['ratelimit-policy']).toBe('100;w=3600, 10;w=1')
    expect(headersAfter('draft-6', options, 1)['ratelimit-policy']).toBe('100;w=3600, 10;w=1')
  })

  it("'draft-7' merges its policies with a stacked middleware's, equal quotas once", () => {
    const res: FakeResponse = new Map([['ratelimit-policy', '100;w=60, 5;w=1']])
    expect(
      headersAfter('draft-7', { limit: 100, window: '1h', algorithm: 'fixed-window' }, 1, 0, res)[
        'ratelimit-policy'
      ],
    ).toBe('100;w=3600, 5;w=1')
    const bulkhead: FakeResponse = new Map([['ratelimit-policy', '20']])
    expect(
      headersAfter(
        'draft-6',
        { limit: 20, window: '1m', algorithm: 'fixed-window' },
        1,
        0,
        bulkhead,
      )['ratelimit-policy'],
    ).toBe('20;w=60')
  })

  it("'draft-7' keeps an existing tighter RateLimit, replaces a looser one", () => {
    const tighter: FakeResponse = new Map([['ratelimit', 'limit=5, remaining=1, reset=3']])
    expect(headersAfter('draft-7', { limit: 100, window: '1m' }, 1, 0, tighter).ratelimit).toBe(
      'limit=5, remaining=1, reset=3',
    )
    const looser: FakeResponse = new Map([['ratelimit', 'limit=500, remaining=400, reset=3']])
    expect(
      headersAfter('draft-7', { limit: 100, window: '1m', algorithm: 'fixed-window' }, 1, 0, looser)
        .ratelimit,
    ).toBe('limit=100, remaining=99, reset=60')
  })

  it("'draft-6' writes the three fields and the policy", () => {
    expect(
      headersAfter('draft-6', { limit: 100, window: '1m', algorithm: 'fixed-window' }, 43, 48_000),
    ).toEqual({
      'ratelimit-limit': '100',
      'ratelimit-remaining': '57',
      'ratelimit-reset': '12',
      'ratelimit-policy': '100;w=60',
    })
  })

  it("'legacy' writes X-RateLimit-* with the reset in seconds", () => {
    expect(
      headersAfter('legacy', { limit: 100, window: '1m', algorithm: 'fixed-window' }, 43, 48_000),
    ).toEqual({
      'x-ratelimit-limit': '100',
      'x-ratelimit-remaining': '57',
      'x-ratelimit-reset': '12',
    })
  })

  it("'legacy' and 'draft-6' send no reset for a bulkhead", () => {
    expect(headersAfter('legacy', [concurrencyPolicy('bulkhead', 4)], 1)).toEqual({
      'x-ratelimit-limit': '4',
      'x-ratelimit-remaining': '3',
    })
    expect(headersAfter('draft-6', [concurrencyPolicy('bulkhead', 4)], 1)).toEqual({
      'ratelimit-limit': '4',
      'ratelimit-remaining': '3',
      'ratelimit-policy': '4',
    })
  })

  it('false writes nothing', () => {
    expect(createHeaderWriter(false, [compilePolicy({}, 'test')], 'test')).toBeUndefined()
  })

  it('refuses an unknown mode, naming the factory', () => {
    expect(() => createHeaderWriter('draft-9', [], 'rateLimit')).toThrow(
      new TypeError(
        `rateLimit: "headers" must be one of 'draft-8', 'draft-7', 'draft-6', 'legacy', false, got "draft-9"`,
      ),
    )
  })
})

describe('seconds', () => {
  it.each([
    [0, 0],
    [-5, 0],
    [Number.NaN, 0],
    [1, 1],
    [999, 1],
    [1000, 1],
    [1000.000_000_1, 1],
    [1001, 2],
    [11_200, 12],
    [60_000, 60],
    [999_999_999_999_999_000, 999_999_999_999_999],
    [Number.POSITIVE_INFINITY, 999_999_999_999_999],
  ])('toSeconds(%d) = %d', (ms, seconds) => {
    expect(toSeconds(ms)).toBe(seconds)
  })

  it('Retry-After rounds up to at least 1, and uses the window for a request that never fits', () => {
    expect(retryAfterSeconds(0, 60_000)).toBe(1)
    expect(retryAfterSeconds(0.4, 60_000)).toBe(1)
    expect(retryAfterSeconds(1_500, 60_000)).toBe(2)
    expect(retryAfterSeconds(Number.POSITIVE_INFINITY, 60_000)).toBe(60)
  })
})
