import { ManualClock } from '@sluice/core'
import {
  RateLimitEngine,
  type RateLimitOptions,
  type RequestAccessors,
  type ResponseAccessors,
} from '@sluice/http/adapter'
import { memoryStore, type Store } from '@sluice/keyed'
import { expect, it } from 'vitest'
import { redisStore } from '../src/index'
import { connect, describeRedis, uniquePrefix } from './helpers'

// Issue 22: on Redis a refusal's `t` disagreed with its Retry-After (token bucket 60 vs 6,
// warm-up 54 vs 10, sliding window 11 vs 9), and an admitted token bucket's `t` was the
// time until full (9,495 ms against 3,498 ms in memory). The engine writes the headers
// from the store's results: on a ManualClock (the store's `clock` option) every header
// of a Redis store must be the memory store's.

type FakeResponse = Map<string, string>

const request: RequestAccessors<unknown> = {
  ip: () => '10.0.0.1',
  method: () => 'GET',
  path: () => '/',
  route: () => undefined,
  header: () => undefined,
}
const response: ResponseAccessors<unknown, FakeResponse> = {
  getHeader: (res, name) => res.get(name),
  setHeader: (res, name, value) => void res.set(name, value),
  signal: () => new AbortController().signal,
}

const redis = connect()

function engine(options: RateLimitOptions, store: Store, clock: ManualClock) {
  return new RateLimitEngine<unknown, FakeResponse>({
    options: { ...options, key: () => 'client', clock, store },
    request,
    response,
  })
}

/** The headers of one request, and its status. */
async function send(limiter: ReturnType<typeof engine>): Promise<Record<string, string>> {
  const res: FakeResponse = new Map()
  const outcome = await limiter.admit({}, res)
  return { ...Object.fromEntries(res), action: outcome.action }
}

/** The same requests, `gaps` ms apart, through a memory store and a Redis store. */
async function both(options: RateLimitOptions, gaps: readonly number[]) {
  const clock = new ManualClock(1_800_000_000_000)
  const memory = engine(options, memoryStore({ clock }), clock)
  const onRedis = engine(
    options,
    redisStore({ client: redis, prefix: uniquePrefix(), clock, onError: 'deny', timeout: '10s' }),
    clock,
  )
  const seen: { memory: Record<string, string>; redis: Record<string, string> }[] = []
  for (const gap of gaps) {
    clock.advance(gap)
    seen.push({ memory: await send(memory), redis: await send(onRedis) })
  }
  return seen
}

describeRedis('header times on Redis (issue 22)', () => {
  it.each([
    ['token-bucket', '"10-per-1m-token-bucket";r=0;t=6', '6'],
    ['warm-up', '"10-per-1m-warm-up-0s";r=0;t=6', '6'],
    ['sliding-window', '"10-per-1m";r=0;t=66', '66'],
    ['fixed-window', '"10-per-1m-fixed-window";r=0;t=60', '60'],
  ] as const)('%s: t of the refusing policy is Retry-After', async (algorithm, item, retry) => {
    const warmUp = algorithm === 'warm-up' ? { warmUp: 0 } : {}
    const seen = await both({ algorithm, limit: 10, window: '1m', ...warmUp }, Array(11).fill(0))
    const refused = seen.at(-1)!.redis
    expect([refused.action, refused.RateLimit, refused['Retry-After']]).toEqual([
      'refuse',
      item,
      retry,
    ])
    for (const { memory, redis } of seen) expect(redis).toEqual(memory)
  })

  it.each<[string, RateLimitOptions]>([
    ['a token bucket', { algorithm: 'token-bucket', limit: 10, window: '1m' }],
    ['a warming bucket', { algorithm: 'warm-up', limit: 10, window: '1m', warmUp: '5m' }],
    ['a sliding window', { algorithm: 'sliding-window', limit: 10, window: '1m', slots: 6 }],
    ['a leaky bucket', { algorithm: 'leaky-bucket', limit: 10, window: '1m' }],
    [
      'a penalty',
      { algorithm: 'fixed-window', limit: 3, window: '10s', block: { for: '1m', after: 2 } },
    ],
    [
      'several policies',
      {
        policies: [
          { algorithm: 'token-bucket', limit: 5, window: '10s', capacity: 3 },
          { algorithm: 'sliding-window', limit: 20, window: '1m' },
        ],
      },
    ],
  ])('%s: every header, admitted or refused, is the memory store’s', async (_, options) => {
    const gaps = [0, 0, 1_500, 0, 250, 0, 0, 3_498, 0, 0, 0, 6_000, 0, 17_000, 0, 0, 900, 61_000, 0]
    const seen = await both(options, gaps)
    expect(seen.map(({ redis }) => redis)).toEqual(seen.map(({ memory }) => memory))
    expect(seen.some(({ redis }) => redis.action === 'refuse')).toBe(true)
  })
})
