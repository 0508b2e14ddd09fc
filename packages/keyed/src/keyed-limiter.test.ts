import diagnostics from 'node:diagnostics_channel'
import { ManualClock, RateLimitError } from '@sluice/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { RateLimitEvent } from './events'
import { boundedKey } from './key'
import { keyedLimiter } from './keyed-limiter'
import { memoryStore } from './memory-store'
import type { RateAlgorithm } from './policy'
import type { Store } from './store'
import { watchWarnings } from './testing/warnings'

afterEach(() => {
  vi.useRealTimers()
})

describe('keyedLimiter: consume', () => {
  it('answers synchronously on a memory store, every field, then refuses with a wait', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({ limit: 3, window: '1s', clock })
    expect(limiter.name).toBe('3-per-1s')
    const first = limiter.consume('a')
    expect(first).toMatchObject({
      allowed: true,
      policy: '3-per-1s',
      remaining: 2,
      retryAfterMs: 0,
    })
    // A sliding window of 10 slots: one more permit when the first slot has left it.
    expect(first.resetMs).toBe(1100)
    expect(first.receipt).toBeDefined()
    expect(limiter.consume('a', 2).remaining).toBe(0)
    const refused = limiter.consume('a')
    expect(refused).toMatchObject({ allowed: false, remaining: 0, receipt: undefined })
    expect(refused.retryAfterMs).toBe(1100)
    expect(refused.policies).toEqual([
      {
        policy: '3-per-1s',
        allowed: false,
        blocked: false,
        remaining: 0,
        resetMs: 1100,
        retryAfterMs: 1100,
      },
    ])
    // Another key has its own budget.
    expect(limiter.consume('b').remaining).toBe(2)
  })

  it('checks several dimensions in one call, each charged its own cost', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({
      clock,
      policies: [
        { name: 'requests', limit: 60, window: '1m' },
        { name: 'tokens', limit: 90_000, window: '1m', algorithm: 'token-bucket' },
        { name: 'monthly', limit: 10_000_000, window: '30d', algorithm: 'fixed-window' },
      ],
    })
    const taken = limiter.consume('org', { requests: 1, tokens: 1200, monthly: 1200 })
    expect(taken.policies.map((p) => [p.policy, p.remaining])).toEqual([
      ['requests', 59],
      ['tokens', 88_800],
      ['monthly', 9_998_800],
    ])
    // The overall fields are the policy with the fewest left.
    expect([taken.policy, taken.remaining]).toEqual(['requests', 59])
    // Tokens run out first; nothing is taken from the others.
    const refused = limiter.consume('org', { requests: 1, tokens: 90_000 })
    expect([refused.allowed, refused.policy]).toEqual([false, 'tokens'])
    expect(limiter.get('org').policies.map((p) => p.remaining)).toEqual([59, 88_800, 9_998_800])
    expect(() => limiter.consume('org', { token: 1 })).toThrow(
      new TypeError(
        'keyedLimiter.consume: "cost" names no policy: "token" (policies: "requests", "tokens", "monthly")',
      ),
    )
  })

  it('consumeOrThrow throws RateLimitError with the wait and the refusing policy', () => {
    const limiter = keyedLimiter({ limit: 1, window: '1m', name: 'jobs', clock: new ManualClock() })
    limiter.consumeOrThrow('tenant')
    let caught: unknown
    try {
      limiter.consumeOrThrow('tenant')
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(RateLimitError)
    expect(caught).toMatchObject({
      code: 'ERR_SLUICE_LIMITED',
      limiter: 'jobs',
      retryAfterMs: 66_000,
    })
  })

  it('refunds by receipt, and a refund after the window credits nothing', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({ limit: 2, window: '1s', algorithm: 'fixed-window', clock })
    const taken = limiter.consume('k')
    limiter.refund(taken.receipt!)
    expect(limiter.get('k').remaining).toBe(2)
    const late = limiter.consume('k', 2)
    clock.advance(1000)
    limiter.consume('k')
    limiter.refund(late.receipt!)
    expect(limiter.get('k').remaining).toBe(1)
    const other = keyedLimiter({ limit: 2, clock })
    expect(() => other.refund(late.receipt!)).toThrow(TypeError)
  })

  it('publishes one sluice:rate-limit event per consume', () => {
    const events: RateLimitEvent[] = []
    const listen = (message: unknown) => events.push(message as RateLimitEvent)
    diagnostics.subscribe('sluice:rate-limit', listen)
    try {
      const limiter = keyedLimiter({ limit: 1, name: 'ws', clock: new ManualClock() })
      limiter.consume('conn-1')
      limiter.consume('conn-1')
    } finally {
      diagnostics.unsubscribe('sluice:rate-limit', listen)
    }
    expect(
      events.map((e) => [e.key, e.policy, e.allowed, e.enforced, e.remaining, e.cost]),
    ).toEqual([
      ['conn-1', 'ws', true, true, 0, 1],
      ['conn-1', 'ws', false, true, 0, 1],
    ])
    expect(events[1]?.retryAfterMs).toBe(66_000)
  })
})

describe('keyedLimiter: penalties, rewards, blocks (a login limiter)', () => {
  it('counts wrong logins with penalty(), as rate-limiter-flexible users do', () => {
    const clock = new ManualClock()
    const logins = keyedLimiter({ limit: 3, window: '15m', algorithm: 'fixed-window', clock })
    const attempt = (password: string) => {
      const key = 'ann:203.0.113.7'
      if (!logins.consume(key).allowed) return 429
      if (password === 'right') return 200
      logins.penalty(key, 1)
      return 401
    }
    // Each wrong login costs 2 (the attempt and its penalty): the second takes the last
    // permit and its penalty goes into debt, so from the third on even the right
    // password is refused (rate-limiter-flexible's port answered the same).
    expect(['x', 'y', 'z', 'right'].map(attempt)).toEqual([401, 401, 429, 429])
    logins.reward('ann:203.0.113.7', 3)
    expect(attempt('right')).toBe(200)
  })

  it('penalty takes beyond the limit: debt the key waits out', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({ limit: 10, window: '10s', algorithm: 'token-bucket', clock })
    const after = limiter.penalty('k', 25)
    expect([after.allowed, after.remaining]).toEqual([false, 0])
    // 15 permits beyond the bucket: 15 s until one permit fits again.
    expect(limiter.get('k').retryAfterMs).toBe(16_000)
    clock.advance(16_000)
    expect(limiter.consume('k').allowed).toBe(true)
    expect(limiter.consume('k').allowed).toBe(false)
  })

  it('block refuses for the duration whatever the budget; 0 lifts it; delete forgets all', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({ limit: 5, window: '1m', clock })
    limiter.block('spammer', '30s')
    const refused = limiter.consume('spammer')
    expect([refused.allowed, refused.remaining, refused.retryAfterMs]).toEqual([false, 0, 30_000])
    expect([refused.blocked, refused.policies[0]?.blocked]).toEqual([true, true])
    clock.advance(30_000)
    expect(limiter.consume('spammer').allowed).toBe(true)
    limiter.block('spammer', '1h')
    limiter.block('spammer', 0)
    expect(limiter.consume('spammer').remaining).toBe(3)
    limiter.delete('spammer')
    expect(limiter.get('spammer').remaining).toBe(5)
  })

  it('a policy penalty blocks a key refused `after` times', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({ limit: 1, window: '1m', block: { for: '5m', after: 2 }, clock })
    limiter.consume('k')
    expect(limiter.consume('k').retryAfterMs).toBe(66_000)
    expect(limiter.consume('k').retryAfterMs).toBe(300_000)
  })
})

describe('keyedLimiter: reserve and settle', () => {
  const llm = (clock: ManualClock) =>
    keyedLimiter({
      clock,
      policies: [
        { name: 'requests', limit: 60, window: '1m' },
        { name: 'tokens', limit: 10_000, window: '1m', algorithm: 'token-bucket' },
      ],
    })

  it('a streamed 10k-token answer reserved at 1k settles to a 10k charge; the next waits out the debt', () => {
    const clock = new ManualClock()
    const limiter = llm(clock)
    const reservation = limiter.reserve('org', { requests: 1, tokens: 1000 })
    expect(reservation.allowed).toBe(true)
    expect(limiter.get('org').policies[1]?.remaining).toBe(9000)
    const settled = reservation.settle({ requests: 1, tokens: 11_000 })
    // 1,000 tokens beyond the bucket: the next request waits until they have drained.
    expect(settled.policies[1]).toMatchObject({ remaining: 0 })
    const next = limiter.reserve('org', { requests: 1, tokens: 1000 })
    expect(next.allowed).toBe(false)
    expect(next.retryAfterMs).toBe(12_000)
    clock.advance(12_000)
    expect(limiter.reserve('org', { requests: 1, tokens: 1000 }).allowed).toBe(true)
  })

  it('settling below the estimate refunds the difference; settle twice and cancel after settle throw', () => {
    const clock = new ManualClock()
    const limiter = llm(clock)
    const reservation = limiter.reserve('org', { requests: 1, tokens: 4000 })
    reservation.settle({ requests: 1, tokens: 1500 })
    expect(limiter.get('org').policies.map((p) => p.remaining)).toEqual([59, 8500])
    expect(() => reservation.settle({ requests: 1, tokens: 1 })).toThrow(
      'keyedLimiter: Reservation.settle() on a reservation of "org" failed: it was already settled',
    )
    expect(() => reservation.cancel()).toThrow('it was already settled')
    const cancelled = limiter.reserve('org', 10)
    cancelled.cancel()
    cancelled.cancel()
    expect(() => cancelled.settle(1)).toThrow('it was already cancelled')
    expect(limiter.get('org').policies.map((p) => p.remaining)).toEqual([59, 8500])
  })

  it('a refused reservation takes nothing and cannot be settled; reserveOrThrow throws', () => {
    const limiter = llm(new ManualClock())
    const refused = limiter.reserve('org', { tokens: 20_000 })
    expect([refused.allowed, refused.retryAfterMs]).toEqual([false, Number.POSITIVE_INFINITY])
    expect(() => refused.settle({ tokens: 1 })).toThrow('it was refused: nothing was reserved')
    expect(() => limiter.reserveOrThrow('org', { tokens: 20_000 })).toThrow(RateLimitError)
  })

  it('a reservation never settled is cancelled after reservationTtl, on the limiter’s clock', async () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({ limit: 5, window: '1h', reservationTtl: '2m', clock })
    limiter.reserve('job', 4)
    const settled = limiter.reserve('job', 1)
    settled.settle(1)
    expect(limiter.get('job').remaining).toBe(0)
    await clock.advanceAsync(119_999)
    expect(limiter.get('job').remaining).toBe(0)
    await clock.advanceAsync(1)
    expect(limiter.get('job').remaining).toBe(4)
    expect(clock.pendingSleeps).toBe(0)
  })

  it('a bad actual cost throws and leaves the reservation open, its time to live running', async () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({ limit: 5, window: '1h', reservationTtl: '2m', clock })
    const reservation = limiter.reserve('job', 4)
    for (const bad of [-1, 1.5, Number.NaN]) {
      expect(() => reservation.settle(bad)).toThrow(
        new RangeError(
          `keyedLimiter: Reservation.settle: "actual" must be a non-negative safe integer, got ${bad}`,
        ),
      )
    }
    expect(() => reservation.settle({ job: 1 })).toThrow(
      new TypeError(
        'keyedLimiter: Reservation.settle: "actual" names no policy: "job" (policies: "5-per-1h")',
      ),
    )
    expect(limiter.get('job').remaining).toBe(1)
    // Still open: it settles, and until then its time to live still runs.
    await clock.advanceAsync(120_000)
    expect(limiter.get('job').remaining).toBe(5)
    expect(clock.pendingSleeps).toBe(0)
    const again = limiter.reserve('job', 4)
    expect(() => again.settle(-1)).toThrow(RangeError)
    again.settle(3)
    expect(limiter.get('job').remaining).toBe(2)
  })

  it('settles to 0 (an abandoned job) as a number or per policy: the whole estimate back', () => {
    const clock = new ManualClock()
    const limiter = llm(clock)
    limiter.reserve('org', { requests: 1, tokens: 4000 }).settle(0)
    expect(limiter.get('org').policies.map((p) => p.remaining)).toEqual([60, 10_000])
    const settled = limiter
      .reserve('org', { requests: 1, tokens: 4000 })
      .settle({ requests: 0, tokens: 0 })
    expect(settled.policies.map((p) => p.remaining)).toEqual([60, 10_000])
    // Only the requests are charged: the tokens go back.
    limiter.reserve('org', { requests: 1, tokens: 4000 }).settle({ requests: 1 })
    expect(limiter.get('org').policies.map((p) => p.remaining)).toEqual([59, 10_000])
  })

  it('a settle after reservationTtl charges the whole actual cost: its estimate was given back', async () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({
      clock,
      reservationTtl: '10m',
      policies: [
        { name: 'requests', limit: 60, window: '1m' },
        { name: 'tokens', limit: 10_000, window: '1m', algorithm: 'token-bucket' },
      ],
    })
    // A long stream: reserved at 1,000 tokens, still running when its time to live ends.
    const stream = limiter.reserve('org', { requests: 1, tokens: 1000 })
    expect(limiter.get('org').policies[1]?.remaining).toBe(9000)
    await clock.advanceAsync(600_000)
    // The estimate went back (the request's permit had left its window already).
    expect(limiter.get('org').policies.map((p) => p.remaining)).toEqual([60, 10_000])
    stream.cancel() // already given back: nothing more
    expect(limiter.get('org').policies[1]?.remaining).toBe(10_000)
    // It ends, 12,000 tokens used: all of them are charged now, 2,000 beyond the bucket.
    const settled = stream.settle({ requests: 1, tokens: 12_000 })
    expect(settled.policies.map((p) => [p.policy, p.remaining, p.allowed])).toEqual([
      ['requests', 59, true],
      ['tokens', 0, false],
    ])
    // 2,000 tokens of debt and 1 of the next request, at 6 ms a token.
    expect(limiter.reserve('org', { requests: 1, tokens: 1 }).retryAfterMs).toBe(12_006)
    expect(() => stream.settle(1)).toThrow('it was already settled')
    expect(() => stream.cancel()).toThrow('it was already settled')
  })

  it('a store failing to give an expired estimate back is reported, not an unhandled rejection', async () => {
    const clock = new ManualClock()
    const inner = memoryStore({ clock })
    const store: Store = {
      take: (...args) => inner.take(...args),
      refund: () => Promise.reject(new Error('store down')),
      force: (...args) => inner.force(...args),
      block: (...args) => inner.block(...args),
      release: (...args) => inner.release(...args),
      get: (...args) => inner.get(...args),
      reset: (...args) => inner.reset(...args),
      resetAll: () => inner.resetAll(),
    }
    const limiter = keyedLimiter({ limit: 5, window: '1h', reservationTtl: '2m', clock, store })
    const watch = watchWarnings()
    try {
      limiter.reserve('job', 4)
      await clock.advanceAsync(120_000)
      await new Promise((resolve) => setImmediate(resolve))
      expect(watch.given).toEqual([
        [
          'ERR_SLUICE_REFUND_FAILED',
          'keyedLimiter: the estimate of a reservation of "job" left unsettled past its reservationTtl could not be given back: Error: store down (see https://github.com/sluice-js/sluice/blob/main/docs/warnings/ERR_SLUICE_REFUND_FAILED.md)',
        ],
      ])
    } finally {
      watch.stop()
    }
  })

  it('without a clock, the time to live is a timer that keeps no process alive', () => {
    vi.useFakeTimers()
    const limiter = keyedLimiter({ limit: 5, window: '1h', reservationTtl: '2m' })
    limiter.reserve('job', 4)
    expect(limiter.get('job').remaining).toBe(1)
    vi.advanceTimersByTime(120_000)
    expect(limiter.get('job').remaining).toBe(5)
  })
})

describe('keyedLimiter: debt, algorithm by algorithm (the README table)', () => {
  // 10 per 10 s (T = 1 s, capacity 10), a fresh key charged 25 permits in all at `at` ms:
  // by a penalty, or by a reservation of 1 settled at 25. How long a cost of 1 is
  // refused, and what is left once it passes.
  it.each<[RateAlgorithm, number, number, number]>([
    // tat = at + 25 s; a take waits until tat + 1 s − 10 s: (25 + 1 − 10) × T.
    ['token-bucket', 0, 16_000, 0],
    ['token-bucket', 4500, 16_000, 0],
    // A burst of 1: (25 + 1 − 1) × T.
    ['leaky-bucket', 0, 25_000, 0],
    ['leaky-bucket', 4500, 25_000, 0],
    // A cold key counts 3 T a permit: 25 × 3 s, then 1 s (warm by then) − 10 s.
    ['warm-up', 0, 66_000, 0],
    ['warm-up', 4500, 66_000, 0],
    // Refused until the window ends, whatever the debt; the next window starts afresh.
    ['fixed-window', 0, 10_000, 9],
    ['fixed-window', 4500, 5500, 9],
    // Refused until the permits' slot (1 s) has left the window; then nothing is owed.
    ['sliding-window', 0, 11_000, 9],
    ['sliding-window', 4500, 10_500, 9],
  ])('%s, charged at %i ms: refused for %i ms, then %i left', (algorithm, at, waitMs, left) => {
    for (const how of ['penalty', 'settle'] as const) {
      const clock = new ManualClock()
      const limiter = keyedLimiter({
        algorithm,
        limit: 10,
        window: '10s',
        clock,
        ...(algorithm === 'warm-up' ? { warmUp: '30s' } : {}),
      })
      clock.advance(at)
      const after =
        how === 'penalty' ? limiter.penalty('k', 25) : limiter.reserve('k', 1).settle(25)
      expect([after.allowed, after.remaining, after.retryAfterMs]).toEqual([false, 0, waitMs])
      clock.advance(waitMs - 1)
      expect(limiter.consume('k').allowed).toBe(false)
      clock.advance(1)
      const passed = limiter.consume('k')
      expect([passed.allowed, passed.remaining]).toEqual([true, left])
    }
  })

  it('a penalty is no refusal: it counts no strike toward `block`; the next refusal does', () => {
    const clock = new ManualClock()
    const limiter = keyedLimiter({ limit: 10, window: '10s', block: { for: '1m' }, clock })
    const after = limiter.penalty('k', 25)
    expect([after.blocked, after.retryAfterMs]).toEqual([false, 11_000])
    const refused = limiter.consume('k')
    expect([refused.blocked, refused.retryAfterMs]).toEqual([true, 60_000])
  })
})

describe('keyedLimiter: bulkheads, keys, bad input', () => {
  it('enter(key) holds a slot per key until released; a second release throws', () => {
    const limiter = keyedLimiter({ max: 2 })
    const a = limiter.enter('db')!
    const b = limiter.enter('db')!
    expect(limiter.enter('db')).toBeUndefined()
    expect(limiter.enter('other')).toBeDefined()
    a.release()
    expect(() => a.release()).toThrow('the permit of "db" was already released')
    {
      using c = limiter.enter('db')
      expect(c).toBeDefined()
    }
    b.release()
    expect(limiter.get('db').remaining).toBe(2)
    expect(() => keyedLimiter({ limit: 1 }).enter('x')).toThrow(TypeError)
    expect(() => keyedLimiter({ max: 1, limit: 1 })).toThrow(
      'keyedLimiter: "limit" cannot be combined with "max" (a bulkhead per key), got 1',
    )
  })

  it('stores long keys as their digest, and a key that forges a digest gets one of its own', () => {
    const store = memoryStore()
    const limiter = keyedLimiter({ limit: 1, window: '1h', store })
    const long = 'x'.repeat(300)
    expect(limiter.keyFor(long)).toBe(boundedKey(long))
    expect(limiter.consume(long).allowed).toBe(true)
    // The digest form of the long key, sent as a key of its own, shares nothing with it.
    const forged = boundedKey(long)
    expect(limiter.keyFor(forged)).not.toBe(forged)
    expect(limiter.consume(forged).allowed).toBe(true)
    expect(limiter.consume(long).allowed).toBe(false)
  })

  it('get and delete take a key as given or as keyFor shows it (a long key’s digest)', () => {
    const limiter = keyedLimiter({ limit: 2, window: '1h', clock: new ManualClock() })
    const long = 'x'.repeat(300)
    limiter.consume(long)
    expect(limiter.get(long).remaining).toBe(1)
    // What the events, the logs and keyFor show for it: the key as stored.
    expect(limiter.get(limiter.keyFor(long)).remaining).toBe(1)
    limiter.delete(limiter.keyFor(long))
    expect(limiter.get(long).remaining).toBe(2)
  })

  it('refuses bad costs, keys and options, naming the call and the value, counting nothing', () => {
    const limiter = keyedLimiter({ limit: 5, window: '1m', name: 'api' })
    for (const cost of [0, -1, 1.5, Number.NaN, 2 ** 53]) {
      expect(() => limiter.consume('k', cost)).toThrow(
        `keyedLimiter.consume: "cost" must be a positive safe integer, got ${cost}`,
      )
    }
    expect(() => limiter.consume('k', '1' as never)).toThrow(TypeError)
    expect(() => limiter.consume('k', { api: -1 })).toThrow(
      'keyedLimiter.consume: "cost.api" must be a non-negative safe integer, got -1',
    )
    expect(() => limiter.consume('', 1)).toThrow(
      new TypeError('keyedLimiter.consume: "key" must be a non-empty string, got ""'),
    )
    expect(() => limiter.consume(42 as never)).toThrow(
      new TypeError('keyedLimiter.consume: "key" must be a non-empty string, got 42'),
    )
    expect(() => limiter.get(undefined as never)).toThrow(
      new TypeError('keyedLimiter.get: "key" must be a non-empty string, got undefined'),
    )
    expect(() => limiter.penalty('')).toThrow('keyedLimiter.penalty: "key"')
    expect(() => limiter.block('', '1m')).toThrow('keyedLimiter.block: "key"')
    expect(() => limiter.delete('')).toThrow('keyedLimiter.delete: "key"')
    expect(() => limiter.keyFor('')).toThrow('keyedLimiter.keyFor: "key"')
    // A refund or a reward gives something back: 0 is refused in either form, as in consume.
    expect(() => limiter.reward('k', 0)).toThrow(
      'keyedLimiter.reward: "cost" must be a positive safe integer, got 0',
    )
    expect(() => limiter.reward('k', { api: 0 })).toThrow(
      'keyedLimiter.reward: "cost" must charge at least one policy (policies: "api"), got {"api":0}',
    )
    expect(limiter.get('k').remaining).toBe(5)
    expect(() => keyedLimiter({ points: 5 } as never)).toThrow(
      'keyedLimiter: unknown option "points" (use "limit")',
    )
    expect(() => keyedLimiter({ limit: 5, store: {} as never })).toThrow(TypeError)
  })
})
