import { type Carry, ManualClock } from '@sluice/core'
import {
  RateLimitEngine,
  type RequestAccessors,
  type ResponseAccessors,
} from '@sluice/http/adapter'
import { keyedLimiter } from '@sluice/keyed'
import { afterEach, describe, expect, it } from 'vitest'
import { type RedisStoreError, redisStore } from '../src/index'
import { connect, describeRedis, uniquePrefix } from './helpers'

// `reconfigure` on what users build on a Redis store: a keyed limiter (with and without
// quota leases) and a rate-limit middleware. Redis carries every algorithm's state over
// to a changed spec (test/carry.test.ts), so the store says `carries` and reconfiguring is
// allowed; the numbers are the memory tables' (packages/keyed/src/reconfigure.test.ts).
const client = connect()
const failures: RedisStoreError[] = []

afterEach(() => {
  expect(failures).toEqual([])
})

function store(clock: ManualClock, lease?: { share: number }) {
  return redisStore({
    client,
    prefix: uniquePrefix(),
    onError: 'deny',
    onFailure: (error) => failures.push(error),
    clock,
    timeout: '10s',
    ...(lease === undefined ? {} : { lease }),
  })
}

describeRedis('reconfigure on a Redis store', () => {
  it('says it carries, with quota leases too', () => {
    const clock = new ManualClock()
    expect(store(clock).carries).toBe(true)
    expect(store(clock, { share: 0.1 }).carries).toBe(true)
  })

  describe('keyedLimiter, token bucket: existing debt stays owed (Guava: 2 per second, acquire(10), then 1 per second)', () => {
    it.each([
      // mode, wait for the next permit. At 2 per second the 20 permits taken are paid off
      // at 20 · 500 ms − the capacity's 10 · 500 ms = 5 s in every mode but reset; then 1
      // per second: 5 s + 1 s = 6 s.
      ['proportional', 6000],
      ['as-is', 6000],
      ['additive', 6000],
      ['reset', 0],
    ] as const)('%s: the next caller waits %d ms', async (carry, wait) => {
      const clock = new ManualClock(1_000)
      const limiter = keyedLimiter({
        name: 'api',
        algorithm: 'token-bucket',
        limit: 2,
        capacity: 10,
        window: '1s',
        clock,
        store: store(clock),
      })
      expect((await limiter.consume('k', 10)).allowed).toBe(true)
      await limiter.penalty('k', 10)
      expect((await limiter.get('k')).retryAfterMs).toBe(5500)
      limiter.reconfigure(
        { algorithm: 'token-bucket', limit: 1, capacity: 10, window: '1s' },
        { carry },
      )
      expect((await limiter.get('k')).retryAfterMs).toBe(wait)
      if (wait > 0) {
        clock.advance(wait - 1)
        expect((await limiter.consume('k')).allowed).toBe(false)
        clock.advance(1)
      }
      expect((await limiter.consume('k')).allowed).toBe(true)
    })
  })

  it.each([
    // mode, what is left of 20 per minute after 5 of 10 were used
    ['proportional', 10],
    ['as-is', 5],
    ['additive', 15],
    ['reset', 20],
  ] as const)(
    'keyedLimiter with quota leases, sliding window 10 → 20, %s: %d left',
    async (carry, left) => {
      const clock = new ManualClock(0)
      const limiter = keyedLimiter({
        name: 'api',
        limit: 10,
        window: '1m',
        clock,
        store: store(clock, { share: 0.1 }),
      })
      expect((await limiter.consume('k', 5)).allowed).toBe(true)
      limiter.reconfigure({ limit: 20, window: '1m' }, { carry: carry as Carry })
      expect((await limiter.get('k')).remaining).toBe(left)
    },
  )
})

interface FakeRequest {
  plan?: 'free' | 'pro'
}
type FakeResponse = Map<string, string>

const request: RequestAccessors<FakeRequest> = {
  ip: () => '10.0.0.1',
  method: () => 'GET',
  path: () => '/',
  route: () => undefined,
  header: () => undefined,
}
const response: ResponseAccessors<FakeRequest, FakeResponse> = {
  getHeader: (res, name) => res.get(name),
  setHeader: (res, name, value) => void res.set(name, value),
  signal: () => new AbortController().signal,
}

describeRedis('a rate-limit middleware on Redis', () => {
  async function admit(limiter: RateLimitEngine<FakeRequest, FakeResponse>, req: FakeRequest = {}) {
    const res: FakeResponse = new Map()
    const outcome = await limiter.admit(req, res)
    return [outcome.action, res.get('RateLimit')]
  }

  it.each([
    // mode, the header after 2 of 3 were used at 3 per second, then 7 per second and one
    // request more: proportional ⌊1 · 7/3⌋ = 2 left, less the request: 1 (its next permit
    // 2/3 of a permit away); as-is 1 − 1; additive 1 + 4 − 1; reset 7 − 1.
    ['proportional', '"api";r=1;t=1'],
    ['as-is', '"api";r=0;t=1'],
    ['additive', '"api";r=4;t=1'],
    ['reset', '"api";r=6;t=1'],
  ] as const)('token bucket 3 → 7 per second, %s: %s', async (carry, header) => {
    const clock = new ManualClock(5_000)
    const limiter = new RateLimitEngine<FakeRequest, FakeResponse>({
      options: {
        name: 'api',
        algorithm: 'token-bucket',
        limit: 3,
        window: '1s',
        clock,
        store: store(clock),
      },
      request,
      response,
    })
    expect((await admit(limiter))[0]).toBe('pass')
    expect((await admit(limiter))[0]).toBe('pass')
    limiter.reconfigure({ algorithm: 'token-bucket', limit: 7, window: '1s' }, { carry })
    expect(await admit(limiter)).toEqual(['pass', header])
  })

  it('a limit function that returns another spec for a key carries its state (plans)', async () => {
    const clock = new ManualClock(0)
    const limiter = new RateLimitEngine<FakeRequest, FakeResponse>({
      options: {
        name: 'api',
        algorithm: 'fixed-window',
        window: '1m',
        limit: (req) => (req.plan === 'pro' ? 20 : 10),
        clock,
        store: store(clock),
      },
      request,
      response,
    })
    for (let i = 0; i < 5; i++) await admit(limiter, { plan: 'free' })
    // Upgraded mid-window: 5 of 10 used is 10 of 20 used, not a fresh 20.
    expect(await admit(limiter, { plan: 'pro' })).toEqual(['pass', '"api";r=9;t=60'])
    // Downgraded again: 9 of 20 left is 4 of 10 left (rounded down), 3 after this request.
    expect(await admit(limiter, { plan: 'free' })).toEqual(['pass', '"api";r=3;t=60'])
  })
})
