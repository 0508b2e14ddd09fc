import { createServer, get } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Duration, ManualClock } from '@sluice/core'
import { memoryStore } from '@sluice/keyed'
import type { PolicyOptions, Store } from '@sluice/keyed/store'
import {
  forgetWarnings,
  isPromiseLike,
  type MaybePromise,
  rateLimitChannel,
} from '@sluice/keyed/store'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import { type Outcome, SKIPPED } from './engine'
import { FALLBACK_KEY, header } from './keys'
import { RateLimitEngine, type RateLimitOptions } from './rate-limit-engine'
import { listen } from './testing'

interface FakeRequest {
  ip?: string
  headers?: Record<string, string>
  /** Aborts when the fake client goes away. */
  gone?: AbortController
}
/** Response headers by name, as the engine set them. */
type FakeResponse = Map<string, string>

const request: RequestAccessors<FakeRequest> = {
  ip: (req) => req.ip,
  method: () => 'GET',
  path: () => '/',
  route: () => undefined,
  header: (req, name) => req.headers?.[name],
}
const response: ResponseAccessors<FakeRequest, FakeResponse> = {
  getHeader: (res, name) => res.get(name),
  setHeader: (res, name, value) => void res.set(name, value),
  signal: (req) => {
    req.gone ??= new AbortController()
    return req.gone.signal
  },
}

/** An engine on a ManualClock (and a memory store on it) unless the options bring their own. */
function engine(options: RateLimitOptions<FakeRequest, FakeResponse>) {
  const clock = options.clock ?? new ManualClock()
  return new RateLimitEngine({
    options: { clock, store: memoryStore({ clock }), ...options },
    request,
    response,
  })
}

/** A memory store with some methods replaced. */
const storeWith = (overrides: Partial<Store>): Store => Object.assign(memoryStore(), overrides)

/** Admits one request and returns the outcome with the headers it wrote. */
function admit(limiter: RateLimitEngine<FakeRequest, FakeResponse>, req: FakeRequest = {}) {
  const res: FakeResponse = new Map()
  const outcome = limiter.admit({ ip: '10.0.0.1', ...req }, res)
  if (isPromiseLike(outcome)) throw new Error('expected a synchronous outcome')
  return { outcome, res, headers: Object.fromEntries(res) }
}

/**
 * The engine module loaded afresh, with its own process-wide warning memory, so a test
 * sees the warnings a new process would.
 */
async function freshEngine() {
  vi.resetModules()
  const fresh = await import('./rate-limit-engine')
  return (options: RateLimitOptions<FakeRequest, FakeResponse>) => {
    const clock = options.clock ?? new ManualClock()
    return new fresh.RateLimitEngine({
      options: { clock, store: memoryStore({ clock }), ...options },
      request,
      response,
    })
  }
}

function warnings() {
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
  return () => spy.mock.calls.map(([, options]) => (options as unknown as { code: string }).code)
}

/** One turn of the event loop: every promise callback queued so far has run. No time passes. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

afterEach(() => {
  vi.restoreAllMocks()
})

describe('RateLimitEngine.admit', () => {
  it('answers synchronously when every step is synchronous', () => {
    const limiter = engine({ algorithm: 'fixed-window', limit: 1, window: '1s' })
    const first = admit(limiter)
    expect(first.outcome).toMatchObject({
      action: 'pass',
      status: 429,
      holds: false,
      decision: {
        allowed: true,
        enforced: true,
        key: '10.0.0.1',
        limit: 1,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 0,
        cost: 1,
        policy: '1-per-1s-fixed-window',
      },
    })
    expect(first.headers).toEqual({
      'RateLimit-Policy': '"1-per-1s-fixed-window";q=1;w=1',
      RateLimit: '"1-per-1s-fixed-window";r=0;t=1',
    })
    const second = admit(limiter)
    expect(second.outcome).toMatchObject({
      action: 'refuse',
      status: 429,
      holds: false,
      decision: { allowed: false, enforced: true, remaining: 0, retryAfterMs: 1000 },
    })
    expect(second.headers).toEqual({
      'RateLimit-Policy': '"1-per-1s-fixed-window";q=1;w=1',
      RateLimit: '"1-per-1s-fixed-window";r=0;t=1',
      'Retry-After': '1',
    })
    expect(second.outcome.refusal()).toEqual({
      contentType: 'text/plain; charset=utf-8',
      body: 'Too Many Requests',
    })
  })

  it.each<[string, RateLimitOptions<FakeRequest, FakeResponse>]>([
    ['an async key', { key: async (req) => req.ip }],
    ['an async skip', { skip: async () => false }],
    ['an async cost', { cost: async () => 1 }],
    ['an async limit', { limit: async () => 5 }],
    ['an async policies()', { policies: async () => [{ limit: 5 }] }],
    [
      'an async store',
      { store: storeWith({ take: async (...args) => memoryStore().take(...args) }) },
    ],
  ])('answers with a promise once a step is asynchronous: %s', async (_, options) => {
    const outcome = engine(options).admit({ ip: '10.0.0.1' }, new Map())
    expect(isPromiseLike(outcome)).toBe(true)
    expect((await outcome).action).toBe('pass')
  })

  const boom = new Error('boom')
  const throwing = () => {
    throw boom
  }
  // A failing callback is named by its option, the error it threw kept as the cause.
  const failed = (option: string) =>
    new Error(`rateLimit: the "${option}" function failed: boom`, { cause: boom })
  it.each<[string, RateLimitOptions<FakeRequest, FakeResponse>, Error]>([
    ['a throwing key', { key: throwing }, failed('key')],
    ['a throwing skip', { skip: throwing }, failed('skip')],
    ['a throwing cost', { cost: throwing }, failed('cost')],
    ['a throwing limit', { limit: throwing }, boom],
    ['a throwing policies()', { policies: throwing }, boom],
    ['a rejecting key', { key: async () => Promise.reject(boom) }, failed('key')],
    ['a rejecting skip', { skip: async () => Promise.reject(boom) }, failed('skip')],
    [
      'a key that is no string',
      { key: () => 42 as never },
      new TypeError('rateLimit: "key" must return a string or undefined, got 42'),
    ],
    [
      'a cost of 0',
      { cost: () => 0 },
      new TypeError(
        'rateLimit: "cost" must return a positive integer or { [policyName]: number }, got 0',
      ),
    ],
    [
      'a cost of 1.5, asynchronously',
      { cost: async () => 1.5 },
      new TypeError(
        'rateLimit: "cost" must return a positive integer or { [policyName]: number }, got 1.5',
      ),
    ],
    [
      'a limit function returning text',
      { limit: () => '5' as never },
      new TypeError('rateLimit: "limit" must return a positive integer, got "5"'),
    ],
    ['a throwing store', { store: storeWith({ take: throwing }) }, boom],
    ['a rejecting store', { store: storeWith({ take: async () => Promise.reject(boom) }) }, boom],
  ])('never throws synchronously: %s rejects the promise', async (_, options, error) => {
    let outcome: MaybePromise<Outcome> | undefined
    expect(() => {
      outcome = engine(options).admit({ ip: '10.0.0.1' }, new Map())
    }).not.toThrow()
    expect(isPromiseLike(outcome)).toBe(true)
    await expect(outcome).rejects.toEqual(error)
    if (error.cause !== undefined) await expect(outcome).rejects.toHaveProperty('cause', boom)
  })

  it('skips a request skip() picks: nothing counted, no headers, no decision', async () => {
    const limiter = engine({ limit: 1, skip: (req) => req.headers?.['x-skip'] === 'yes' })
    const skipped = admit(limiter, { headers: { 'x-skip': 'yes' } })
    expect(skipped.outcome).toBe(SKIPPED)
    expect(skipped.headers).toEqual({})
    expect(admit(limiter).outcome.action).toBe('pass')
    expect(admit(limiter).outcome.action).toBe('refuse')
    const asyncSkip = engine({ limit: 1, skip: async () => true })
    expect(await asyncSkip.admit({ ip: 'a' }, new Map())).toBe(SKIPPED)
  })

  it('counts requests without a key under one shared fallback key', () => {
    const limiter = engine({ limit: 2, key: header('x-user') })
    expect(admit(limiter, { headers: {} }).outcome.decision).toMatchObject({
      allowed: true,
      key: FALLBACK_KEY,
    })
    expect(admit(limiter, { headers: { 'x-user': '' } }).outcome.decision).toMatchObject({
      allowed: true,
      key: FALLBACK_KEY,
    })
    expect(admit(limiter, { headers: {} }).outcome.decision).toMatchObject({
      allowed: false,
      key: FALLBACK_KEY,
    })
  })

  it('shows the tightest policy: the refusing one, with the longest wait', () => {
    const clock = new ManualClock()
    const limiter = engine({
      policies: [
        { name: 'minute', algorithm: 'fixed-window', limit: 1, window: '1m' },
        { name: 'second', algorithm: 'fixed-window', limit: 1, window: '1s' },
      ],
      clock,
      store: memoryStore({ clock }),
    })
    admit(limiter)
    clock.advance(250)
    const refused = admit(limiter)
    expect(refused.outcome.decision).toMatchObject({
      allowed: false,
      policy: 'minute',
      retryAfterMs: 59_750,
    })
    // Draft -10: the longest wait's t is Retry-After; the other refusing policy's is sooner.
    expect(refused.headers).toEqual({
      'RateLimit-Policy': '"minute";q=1;w=60, "second";q=1;w=1',
      RateLimit: '"minute";r=0;t=60, "second";r=0;t=1',
      'Retry-After': '60',
    })
  })

  it('takes `cost` permits, and refuses a cost above the limit with the window as Retry-After', () => {
    const limiter = engine({
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
      cost: (req) => Number(req.headers?.['x-cost']),
    })
    expect(admit(limiter, { headers: { 'x-cost': '3' } }).outcome.decision).toMatchObject({
      allowed: true,
      remaining: 2,
      cost: 3,
    })
    const tooBig = admit(limiter, { headers: { 'x-cost': '6' } })
    expect(tooBig.outcome.decision).toMatchObject({
      allowed: false,
      remaining: 2,
      retryAfterMs: Number.POSITIVE_INFINITY,
    })
    expect(tooBig.headers['Retry-After']).toBe('60')
  })

  it('writes Retry-After and the headers mode asked for', () => {
    const limiter = engine({ algorithm: 'fixed-window', limit: 1, window: '1m', headers: 'legacy' })
    admit(limiter)
    expect(admit(limiter).headers).toEqual({
      'X-RateLimit-Limit': '1',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': '60',
      'Retry-After': '60',
    })
    const silent = engine({ limit: 1, headers: false })
    admit(silent)
    // Sliding window: a slot counts until all of it has left the window, 66 s.
    expect(admit(silent).headers).toEqual({ 'Retry-After': '66' })
  })
})

describe('RateLimitEngine refunds', () => {
  const refundable = () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const limiter = engine({
      algorithm: 'fixed-window',
      limit: 3,
      window: '1m',
      refundWhen: (req) => req.headers?.refund === 'yes',
      clock,
      store,
    })
    const remaining = () => store.get('10.0.0.1', limiter.policies)[0]?.remaining
    return { limiter, remaining }
  }

  it('gives permits back once the response is over, when refundWhen says so', () => {
    const { limiter, remaining } = refundable()
    const kept = admit(limiter)
    expect(kept.outcome.holds).toBe(true)
    kept.outcome.done(false)
    expect(remaining()).toBe(2)
    const refunded = admit(limiter, { headers: { refund: 'yes' } })
    expect(remaining()).toBe(1)
    refunded.outcome.done(false)
    expect(remaining()).toBe(2)
  })

  it('refunds once however often done is called, and never for a client that left', () => {
    const { limiter, remaining } = refundable()
    const twice = admit(limiter, { headers: { refund: 'yes' } })
    admit(limiter)
    expect(remaining()).toBe(1)
    twice.outcome.done(false)
    twice.outcome.done(false)
    expect(remaining()).toBe(2)
    const gone = admit(limiter, { headers: { refund: 'yes' } })
    gone.outcome.done(true)
    gone.outcome.done(false)
    expect(remaining()).toBe(1)
  })

  it('holds nothing for a refusal, or without refundWhen', () => {
    const { limiter } = refundable()
    for (let i = 0; i < 3; i++) admit(limiter)
    const refused = admit(limiter, { headers: { refund: 'yes' } })
    expect(refused.outcome).toMatchObject({ action: 'refuse', holds: false })
    expect(admit(engine({ limit: 1 })).outcome.holds).toBe(false)
  })

  it('waits for an async refundWhen, and reports a failing one instead of throwing', async () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const failure = new Error('refundWhen broke')
    let answered = 0
    const limiter = engine({
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
      refundWhen: async (req) => {
        answered++
        if (req.headers?.fail === 'yes') throw failure
        return true
      },
      clock,
      store,
    })
    const remaining = () => store.get('10.0.0.1', limiter.policies)[0]?.remaining
    const codes = warnings()
    admit(limiter).outcome.done(false)
    expect(remaining()).toBe(1)
    await turn()
    expect(remaining()).toBe(2)
    const failing = admit(limiter, { headers: { fail: 'yes' } })
    expect(() => failing.outcome.done(false)).not.toThrow()
    await turn()
    expect(codes()).toEqual(['ERR_SLUICE_REFUND_FAILED'])
    expect([answered, remaining()]).toEqual([2, 1])
  })
})

describe('RateLimitEngine on one request twice', () => {
  it('reuses the first decision, counts nothing more, and warns once', async () => {
    const make = await freshEngine()
    const codes = warnings()
    const limiter = make({ limit: 2, window: '1m', refundWhen: () => true })
    const req: FakeRequest = { ip: '10.0.0.1' }
    const res: FakeResponse = new Map()
    const first = limiter.admit(req, res) as Outcome
    const second = limiter.admit(req, res) as Outcome
    expect(isPromiseLike(second)).toBe(false)
    expect(second.action).toBe('pass')
    expect(second.decision).toBe(first.decision)
    expect(second.decision).toMatchObject({ remaining: 1 })
    // Nothing was taken, so nothing may be refunded; headers were written once.
    expect(second.holds).toBe(false)
    expect(res.get('RateLimit')).toBe('"2-per-1m";r=1;t=66')
    expect(codes()).toEqual(['ERR_SLUICE_DOUBLE_COUNT'])
    const again: FakeRequest = { ip: '10.0.0.1' }
    limiter.admit(again, new Map())
    expect((limiter.admit(again, new Map()) as Outcome).decision).toMatchObject({ remaining: 0 })
    expect(codes()).toEqual(['ERR_SLUICE_DOUBLE_COUNT'])
  })

  it('two different middlewares on one request both count', () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const outer = engine({ name: 'outer', limit: 5, window: '1m', store, clock })
    const inner = engine({ name: 'inner', limit: 2, window: '1m', store, clock })
    const req: FakeRequest = { ip: '10.0.0.1' }
    const res: FakeResponse = new Map()
    outer.admit(req, res)
    expect((inner.admit(req, res) as Outcome).decision).toMatchObject({ remaining: 1 })
    expect(res.get('RateLimit')).toBe('"outer";r=4;t=66, "inner";r=1;t=66')
  })
})

describe('RateLimitEngine dry run', () => {
  it('refuses nothing; the decision says what would have been; no Retry-After', () => {
    const limiter = engine({ algorithm: 'fixed-window', limit: 1, window: '1m', dryRun: true })
    expect(limiter.dryRun).toBe(true)
    expect(admit(limiter).outcome.decision).toMatchObject({ allowed: true, enforced: false })
    const over = admit(limiter)
    expect(over.outcome).toMatchObject({
      action: 'pass',
      holds: false,
      decision: { allowed: false, enforced: false, remaining: 0, retryAfterMs: 60_000 },
    })
    expect(over.headers).toEqual({})
  })

  it('sends RateLimit headers when asked, still without Retry-After', () => {
    const limiter = engine({
      algorithm: 'fixed-window',
      limit: 1,
      window: '1m',
      dryRun: true,
      headers: 'draft-8',
    })
    admit(limiter)
    expect(admit(limiter).headers).toEqual({
      'RateLimit-Policy': '"1-per-1m-fixed-window";q=1;w=60',
      RateLimit: '"1-per-1m-fixed-window";r=0;t=60',
    })
  })

  it('counts as the enforcing middleware would, refunds included', () => {
    // Outcome-based counting (count only what refundWhen keeps): in shadow mode the
    // decision must report what enforcement would decide, so refunds happen there too.
    const run = (dryRun: boolean) => {
      const limiter = engine({
        algorithm: 'fixed-window',
        limit: 1,
        window: '1m',
        dryRun,
        refundWhen: (req) => req.headers?.failed !== 'yes',
      })
      return ['no', 'no', 'yes', 'no'].map((failed) => {
        const { outcome } = admit(limiter, { headers: { failed } })
        // What an adapter does: watch the response only when the outcome holds something.
        if (outcome.holds) outcome.done(false)
        return outcome.decision?.allowed
      })
    }
    expect(run(false)).toEqual([true, true, true, false])
    expect(run(true)).toEqual([true, true, true, false])
  })

  it('refuses waiting mode at construction: nothing waits in dry run', () => {
    expect(() => engine({ dryRun: true, wait: { timeout: '1s' } })).toThrow(
      new TypeError(
        'rateLimit: "wait" cannot be combined with dryRun (nothing waits in dry run), got an object',
      ),
    )
  })
})

describe('RateLimitEngine events', () => {
  it('publishes nothing, and builds nothing, while nobody listens', () => {
    expect(rateLimitChannel.hasSubscribers).toBe(false)
    const publish = vi.spyOn(rateLimitChannel, 'publish')
    const limiter = engine({ limit: 1 })
    admit(limiter)
    admit(limiter)
    expect(publish).not.toHaveBeenCalled()
  })

  it('publishes one sluice:rate-limit event per decided request, none for skipped ones', () => {
    const seen = listen<unknown>('sluice:rate-limit')
    try {
      const limiter = engine({
        policies: [
          { name: 'minute', algorithm: 'fixed-window', limit: 2, window: '1m' },
          { name: 'burst', algorithm: 'fixed-window', limit: 1, window: '1s' },
        ],
        skip: (req) => req.headers?.['x-skip'] === 'yes',
      })
      admit(limiter, { headers: { 'x-skip': 'yes' } })
      const req: FakeRequest = { ip: '10.0.0.1' }
      limiter.admit(req, new Map())
      limiter.admit(req, new Map())
      admit(limiter)
      expect(seen.events).toEqual([
        {
          key: '10.0.0.1',
          policy: 'burst',
          allowed: true,
          enforced: true,
          remaining: 0,
          cost: 1,
          retryAfterMs: 0,
          policies: [
            { name: 'minute', allowed: true, remaining: 1 },
            { name: 'burst', allowed: true, remaining: 0 },
          ],
        },
        {
          key: '10.0.0.1',
          policy: 'burst',
          allowed: false,
          enforced: true,
          remaining: 0,
          cost: 1,
          retryAfterMs: 1000,
          policies: [
            { name: 'minute', allowed: true, remaining: 1 },
            { name: 'burst', allowed: false, remaining: 0 },
          ],
        },
      ])
    } finally {
      seen.stop()
    }
  })

  const boom = new Error('boom')
  it.each<[string, RateLimitOptions<FakeRequest, FakeResponse>, string]>([
    [
      'a throwing key',
      {
        key: () => {
          throw boom
        },
      },
      'Error: rateLimit: the "key" function failed: boom',
    ],
    [
      'a rejecting store',
      { store: storeWith({ take: async () => Promise.reject(boom) }) },
      'Error: boom',
    ],
  ])(
    'dry run: %s lets the request pass, reported by a warning and an event',
    async (_, options, reason) => {
      forgetWarnings()
      const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
      const seen = listen<{ allowed: boolean; enforced: boolean; error?: unknown }>(
        'sluice:rate-limit',
      )
      try {
        const limiter = engine({ limit: 1, dryRun: true, ...options })
        for (let i = 0; i < 2; i++) {
          expect(await limiter.admit({ ip: '10.0.0.1' }, new Map())).toBe(SKIPPED)
        }
        expect(seen.events).toEqual([
          expect.objectContaining({ allowed: true, enforced: false, error: expect.any(Error) }),
          expect.objectContaining({ allowed: true, enforced: false, error: expect.any(Error) }),
        ])
        // One warning for one failure, however many requests meet it.
        expect(spy.mock.calls).toEqual([
          [
            `rateLimit: dryRun could not decide a request, so it passed undecided: ${reason} (see https://github.com/sluice-js/sluice/blob/main/docs/warnings/ERR_SLUICE_DRY_RUN_FAILED.md)`,
            { type: 'SluiceWarning', code: 'ERR_SLUICE_DRY_RUN_FAILED' },
          ],
        ])
      } finally {
        seen.stop()
      }
    },
  )

  it('reports a dry-run refusal as not enforced', () => {
    const seen = listen<{ allowed: boolean; enforced: boolean }>('sluice:rate-limit')
    try {
      const limiter = engine({ limit: 1, dryRun: true })
      admit(limiter)
      admit(limiter)
      expect(seen.events.map((e) => [e.allowed, e.enforced])).toEqual([
        [true, false],
        [false, false],
      ])
    } finally {
      seen.stop()
    }
  })
})

describe('RateLimitEngine limits per request', () => {
  const plan = (req: FakeRequest) => req.headers?.plan ?? 'free'

  it('limit as a function of the request: each plan its own budget and name', () => {
    const limiter = engine({
      algorithm: 'fixed-window',
      window: '1m',
      limit: (req) => (plan(req) === 'pro' ? 3 : 1),
      key: (req) => `${plan(req)}:${req.ip}`,
    })
    const statuses = (p: string) =>
      [1, 2, 3, 4].map(() => admit(limiter, { headers: { plan: p } }).outcome.action)
    expect(statuses('free')).toEqual(['pass', 'refuse', 'refuse', 'refuse'])
    expect(statuses('pro')).toEqual(['pass', 'pass', 'pass', 'refuse'])
    expect(admit(limiter, { headers: { plan: 'pro' } }).headers.RateLimit).toBe(
      '"3-per-1m-fixed-window";r=0;t=60',
    )
    expect(limiter.policies.map((p) => p.name)).toEqual([
      '1-per-1m-fixed-window',
      '3-per-1m-fixed-window',
    ])
  })

  it('policies as a function of the request, compiled once per plan', () => {
    const plans: Record<string, PolicyOptions[]> = {
      free: [{ name: 'free', algorithm: 'fixed-window', limit: 1, window: '1m' }],
      pro: [
        { name: 'pro', algorithm: 'fixed-window', limit: 2, window: '1m' },
        { name: 'pro-daily', algorithm: 'fixed-window', limit: 100, window: '1d' },
      ],
    }
    const limiter = engine({ policies: (req) => plans[plan(req)]! })
    expect(admit(limiter).headers.RateLimit).toBe('"free";r=0;t=60')
    expect(admit(limiter).outcome.action).toBe('refuse')
    expect(admit(limiter, { ip: 'b', headers: { plan: 'pro' } }).headers.RateLimit).toBe(
      '"pro";r=1;t=60, "pro-daily";r=99;t=86400',
    )
    expect(limiter.source.resolve({ headers: { plan: 'pro' } })).toBe(
      limiter.source.resolve({ headers: { plan: 'pro' } }),
    )
  })

  it('get(key) reads each policy without taking; resetKey forgets the key', () => {
    const clock = new ManualClock()
    const limiter = engine({
      policies: [
        { name: 'minute', algorithm: 'fixed-window', limit: 5, window: '1m' },
        { name: 'second', algorithm: 'fixed-window', limit: 2, window: '1s' },
      ],
      clock,
      store: memoryStore({ clock }),
    })
    admit(limiter)
    clock.advance(400)
    expect(limiter.get('10.0.0.1')).toEqual([
      { policy: 'minute', limit: 5, remaining: 4, resetMs: 59_600 },
      { policy: 'second', limit: 2, remaining: 1, resetMs: 600 },
    ])
    expect(limiter.get('10.0.0.1')).toEqual(limiter.get('10.0.0.1'))
    limiter.resetKey('10.0.0.1')
    expect(limiter.get('10.0.0.1')).toEqual([
      { policy: 'minute', limit: 5, remaining: 5, resetMs: 0 },
      { policy: 'second', limit: 2, remaining: 2, resetMs: 0 },
    ])
  })
})

describe("RateLimitEngine get, resetKey and keyFor: the keyed limiter's", () => {
  it('refuses a key that is not a non-empty string, naming the call and the value', () => {
    const limiter = engine({ limit: 2 })
    for (const [key, got] of [
      [42, '42'],
      [undefined, 'undefined'],
      ['', '""'],
    ] as const) {
      expect(() => limiter.get(key as never)).toThrow(
        new TypeError(`rateLimit.get: "key" must be a non-empty string, got ${got}`),
      )
      expect(() => limiter.resetKey(key as never)).toThrow(
        new TypeError(`rateLimit.resetKey: "key" must be a non-empty string, got ${got}`),
      )
    }
  })

  it('get with a limit per request reads every plan a key holds state under, past 1,000', () => {
    const limiter = engine({
      limit: (req) => Number(req.headers?.plan),
      window: '1m',
      key: () => 'tenant',
    })
    for (let plan = 1; plan <= 1100; plan++) admit(limiter, { headers: { plan: String(plan) } })
    const states = limiter.get('tenant') as readonly { policy: string; remaining: number }[]
    expect(states.length).toBe(1100)
    expect(states[0]).toEqual({ policy: '1-per-1m', limit: 1, remaining: 0, resetMs: 66_000 })
    expect(states[1099]).toEqual({
      policy: '1100-per-1m',
      limit: 1100,
      remaining: 1099,
      resetMs: 66_000,
    })
    expect(limiter.policies.length).toBe(1100)
  })

  it('after a reconfigure, get reads the policies met since (a name may stand for a new spec)', () => {
    const limiter = engine({ policies: () => [{ name: 'plan', limit: 2, window: '1m' }] })
    admit(limiter)
    expect(limiter.get('10.0.0.1')).toEqual([
      { policy: 'plan', limit: 2, remaining: 1, resetMs: 66_000 },
    ])
    limiter.reconfigure({ policies: () => [{ name: 'plan', limit: 4, window: '1m' }] })
    expect(limiter.get('10.0.0.1')).toEqual([])
    admit(limiter)
    // 1 of 2 used was 2 of 4 (proportional); this request took the third.
    expect(limiter.get('10.0.0.1')).toEqual([
      { policy: 'plan', limit: 4, remaining: 1, resetMs: 66_000 },
    ])
  })

  it('keyFor gives the key as stored; get and resetKey take it, or the key as returned', () => {
    const limiter = engine({ limit: 2, window: '1m', key: header('x-api-key') })
    const long = 'k'.repeat(1000)
    admit(limiter, { headers: { 'x-api-key': long } })
    const stored = limiter.keyFor({ headers: { 'x-api-key': long } }) as string
    expect(stored).toMatch(/^sha256:[\w-]{43}$/)
    expect((limiter.get(stored) as readonly { remaining: number }[])[0]?.remaining).toBe(1)
    expect((limiter.get(long) as readonly { remaining: number }[])[0]?.remaining).toBe(1)
    limiter.resetKey(stored)
    expect((limiter.get(long) as readonly { remaining: number }[])[0]?.remaining).toBe(2)
  })
})

describe('RateLimitEngine penalties', () => {
  // 2 per second; the second refusal within a window blocks the key for 10 s. The
  // refusal that starts the block reports it; requests during the block do not extend it.
  const table: [at: number, action: string, rateLimit: string, retryAfter: string | undefined][] = [
    [0, 'pass', 'r=1;t=1', undefined],
    [0, 'pass', 'r=0;t=1', undefined],
    [100, 'refuse', 'r=0;t=1', '1'],
    [500, 'refuse', 'r=0;t=10', '10'],
    [1_000, 'refuse', 'r=0;t=10', '10'],
    [6_000, 'refuse', 'r=0;t=5', '5'],
    [10_499, 'refuse', 'r=0;t=1', '1'],
    [10_500, 'pass', 'r=1;t=1', undefined],
  ]

  it('blocks a key refused `after` times within the window, Retry-After the time left', () => {
    const clock = new ManualClock()
    const limiter = engine({
      name: 'login',
      algorithm: 'fixed-window',
      limit: 2,
      window: '1s',
      block: { for: '10s', after: 2 },
      clock,
      store: memoryStore({ clock }),
    })
    const seen = table.map(([at]) => {
      clock.set(at)
      const { outcome, headers } = admit(limiter)
      return [
        at,
        outcome.action,
        headers.RateLimit?.replace('"login";', ''),
        headers['Retry-After'],
      ]
    })
    expect(seen).toEqual(table)
  })
})

describe('RateLimitEngine penalties, budget refilled during the block', () => {
  // A token bucket of 2 per 10 s (one token every 5 s) blocked for 6 s at 100 ms: by
  // 5.5 s a token is back, but the key may take it only when the block ends at 6.1 s.
  // t is the time until more quota for this key: the block's end, as Retry-After says.
  const table: [at: number, action: string, rateLimit: string, retryAfter: string | undefined][] = [
    [0, 'pass', 'r=1;t=5', undefined],
    [0, 'pass', 'r=0;t=5', undefined],
    [100, 'refuse', 'r=0;t=6', '6'],
    [5_500, 'refuse', 'r=0;t=1', '1'],
    [6_100, 'pass', 'r=0;t=4', undefined],
  ]

  it('shows t as the time to the end of the block, equal to Retry-After', () => {
    const clock = new ManualClock()
    const limiter = engine({
      name: 'bucket',
      algorithm: 'token-bucket',
      limit: 2,
      window: '10s',
      block: { for: '6s' },
      clock,
      store: memoryStore({ clock }),
    })
    const seen = table.map(([at]) => {
      clock.set(at)
      const { outcome, headers } = admit(limiter)
      return [
        at,
        outcome.action,
        headers.RateLimit?.replace('"bucket";', ''),
        headers['Retry-After'],
      ]
    })
    expect(seen).toEqual(table)
  })
})

describe('RateLimitEngine refusal bodies', () => {
  const refusedWith = (options: RateLimitOptions<FakeRequest, FakeResponse>) => {
    const limiter = engine({ algorithm: 'fixed-window', limit: 1, window: '1m', ...options })
    admit(limiter)
    const { outcome } = admit(limiter)
    expect(outcome.action).toBe('refuse')
    return outcome.refusal()
  }

  it('sends the message as text, an object as JSON, with the status asked for', () => {
    expect(refusedWith({ message: 'Slow down' })).toEqual({
      contentType: 'text/plain; charset=utf-8',
      body: 'Slow down',
    })
    expect(refusedWith({ message: { error: 'limited' } })).toEqual({
      contentType: 'application/json; charset=utf-8',
      body: '{"error":"limited"}',
    })
    const limiter = engine({ limit: 1, statusCode: 503 })
    admit(limiter)
    expect(admit(limiter).outcome.status).toBe(503)
  })

  it('calls a message function with the request and response; async too', async () => {
    expect(refusedWith({ message: (req, res) => `${req.ip} ${res.get('Retry-After')}` })).toEqual({
      contentType: 'text/plain; charset=utf-8',
      body: '10.0.0.1 60',
    })
    await expect(refusedWith({ message: async () => ({ left: 0 }) })).resolves.toEqual({
      contentType: 'application/json; charset=utf-8',
      body: '{"left":0}',
    })
    await expect(refusedWith({ message: async () => [1] as never })).rejects.toThrow(
      new TypeError('rateLimit: "message" must return a string or an object, got an array'),
    )
  })

  it('problemDetails: RFC 9457 quota-exceeded with the violated policies', () => {
    const clock = new ManualClock()
    const limiter = engine({
      policies: [
        { name: 'minute', algorithm: 'fixed-window', limit: 1, window: '1m' },
        { name: 'day', algorithm: 'fixed-window', limit: 100, window: '1d' },
        { name: 'second', algorithm: 'fixed-window', limit: 1, window: '1s' },
      ],
      problemDetails: true,
      message: 'Slow down',
      clock,
      store: memoryStore({ clock }),
    })
    admit(limiter)
    const refusal = admit(limiter).outcome.refusal() as { contentType: string; body: string }
    expect(refusal.contentType).toBe('application/problem+json')
    expect(JSON.parse(refusal.body)).toEqual({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      title: 'Request cannot be satisfied as assigned quota has been exceeded',
      status: 429,
      'violated-policies': ['minute', 'second'],
      detail: 'Slow down',
    })
  })
})

describe('RateLimitEngine construction', () => {
  it.each<[Record<string, unknown>, string]>([
    [
      { windowMs: 1000 },
      `unknown option "windowMs" (use "window": milliseconds or a string such as '15m')`,
    ],
    [{ max: 10 }, 'unknown option "max" (use "limit")'],
    [{ keyGenerator: () => 'k' }, 'unknown option "keyGenerator" (use "key")'],
    [
      { skipFailedRequests: true },
      'unknown option "skipFailedRequests" (use refundWhen: (req, res) => res.statusCode >= 400)',
    ],
    [{ limt: 10 }, 'unknown option "limt" (did you mean "limit"?)'],
    [{ getIp: () => 'k' }, 'unknown option "getIp"'],
  ])('refuses unknown option %j, with a hint where there is one', (options, message) => {
    expect(() => engine(options as never)).toThrow(new TypeError(`rateLimit: ${message}`))
  })

  it('accepts the option names the adapter handles itself', () => {
    expect(
      () =>
        new RateLimitEngine({
          options: { getIp: () => 'k' } as never,
          request,
          response,
          adapterOptions: ['getIp'],
        }),
    ).not.toThrow()
  })

  it.each<[string, unknown, string]>([
    // Express calls it with (req, res, next): app.use(rateLimit) instead of rateLimit().
    ['a request', Object.create({ socket: {} }), 'an object of another kind (Object)'],
    [
      'a class instance',
      new (class IncomingMessage {})(),
      'an object of another kind (IncomingMessage)',
    ],
    // A TC39 decorator used without its call gets the method.
    ['a function', () => {}, 'a function'],
  ])('refuses %s as options: the factory was handed over uncalled', (_, options, got) => {
    expect(() => new RateLimitEngine({ options: options as never, request, response })).toThrow(
      new TypeError(
        `rateLimit: options must be a plain object, got ${got}: was rateLimit handed over without being called? Write rateLimit({ ... }).`,
      ),
    )
  })

  it('reads options as own properties only: a polluted prototype changes nothing', () => {
    const polluted = Object.prototype as Record<string, unknown>
    polluted.dryRun = true
    polluted.skip = () => true
    polluted.capacity = 1000
    polluted.block = { for: '1h' }
    try {
      const limiter = engine({ limit: 1, window: '1m' })
      expect(limiter.dryRun).toBe(false)
      expect(limiter.policies[0]?.block).toBeUndefined()
      expect(admit(limiter).outcome.action).toBe('pass')
      expect(admit(limiter).outcome.action).toBe('refuse')
    } finally {
      delete polluted.dryRun
      delete polluted.skip
      delete polluted.capacity
      delete polluted.block
    }
  })

  it.each<[RateLimitOptions<FakeRequest, FakeResponse>, Error]>([
    [
      { statusCode: 200 },
      new RangeError(
        'rateLimit: "statusCode" must be an HTTP status code from 400 to 599, got 200',
      ),
    ],
    [{ cost: 0 }, new RangeError('rateLimit: "cost" must be a positive integer, got 0')],
    [
      { wait: { timeout: undefined as never } },
      new TypeError('rateLimit: "wait.timeout" is required, got undefined'),
    ],
    [
      { message: 5 as never },
      new TypeError('rateLimit: "message" must be a string, an object or a function, got 5'),
    ],
    [
      { store: {} as Store },
      new TypeError(
        'rateLimit: "store" must implement take, refund, release, get, reset, resetAll, got an object',
      ),
    ],
  ])('refuses %j, naming the option', (options, error) => {
    let thrown: unknown
    try {
      engine(options)
    } catch (e) {
      thrown = e
    }
    expect(thrown).toBeInstanceOf(error.constructor)
    expect(thrown).toEqual(error)
  })

  it('warns once about a numeric window under a second: milliseconds, not seconds', async () => {
    const make = await freshEngine()
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    make({ window: 60 })
    make({ window: 60 })
    make({ window: '60ms' })
    make({ window: 1000 })
    make({ policies: [{ window: '1m' }, { window: 5 }] })
    expect(spy.mock.calls.map(([text]) => String(text).replace(/ \(see .*\)$/, ''))).toEqual([
      `rateLimit: "window" is 60, which is 60 milliseconds, not seconds. Write '60s' if you meant seconds, or '60ms' to silence this.`,
      `rateLimit: "policies[1].window" is 5, which is 5 milliseconds, not seconds. Write '5s' if you meant seconds, or '5ms' to silence this.`,
    ])
  })

  it('warns when created inside a request handler: a new budget per request', async () => {
    const make = await freshEngine()
    const codes = warnings()
    make({ limit: 1 })
    expect(codes()).toEqual([])
    const server = createServer((_req, res) => {
      make({ limit: 1 })
      res.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      await new Promise<void>((resolve, reject) => {
        get({ host: '127.0.0.1', port, agent: false }, (res) => {
          res.resume()
          res.on('end', resolve)
        }).on('error', reject)
      })
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
    expect(codes()).toEqual(['ERR_SLUICE_CREATED_IN_REQUEST'])
  })

  it('refuses one policy name for two algorithms on one store, at the second middleware', () => {
    const store = memoryStore()
    engine({ name: 'api', limit: 100, window: '1m', store })
    expect(() => engine({ name: 'api', limit: 100, window: '1m', store })).not.toThrow()
    // Another spec of the same algorithm is a reconfiguration (a rolling deploy).
    expect(() => engine({ name: 'api', limit: 10, window: '1s', store })).not.toThrow()
    expect(() =>
      engine({ name: 'api', algorithm: 'fixed-window', limit: 10, window: '1s', store }),
    ).toThrow(
      new TypeError(
        'rateLimit: policy "api" (fixed-window 10 per 1s) shares its name with policy "api" (sliding-window 10 per 1s) of an earlier rateLimit on the same store, of another algorithm; give one of them another name (a spec of the same algorithm would carry the state over)',
      ),
    )
  })
})

describe('RateLimitEngine waiting mode', () => {
  const waiting = (maxQueue = 10, timeout: Duration = '10s') => {
    const clock = new ManualClock()
    const limiter = engine({
      algorithm: 'fixed-window',
      limit: 1,
      window: '1s',
      wait: { timeout, maxQueue },
      clock,
      store: memoryStore({ clock }),
    })
    return { clock, limiter }
  }
  const admitLater = (
    limiter: RateLimitEngine<FakeRequest, FakeResponse>,
    req: FakeRequest = { ip: 'a' },
  ) => Promise.resolve(limiter.admit(req, new Map()))

  it('admits queued requests in arrival order, one per window', async () => {
    const { clock, limiter } = waiting()
    await admitLater(limiter)
    const order: number[] = []
    const queued = [1, 2, 3].map((n) =>
      admitLater(limiter).then((outcome) => {
        order.push(n)
        return [outcome.action, clock.now()]
      }),
    )
    for (let i = 0; i < 3; i++) await clock.advanceAsync(1_000)
    expect(await Promise.all(queued)).toEqual([
      ['pass', 1_000],
      ['pass', 2_000],
      ['pass', 3_000],
    ])
    expect(order).toEqual([1, 2, 3])
  })

  it('never lets a newcomer jump the queue', async () => {
    const { clock, limiter } = waiting()
    await admitLater(limiter)
    const first = admitLater(limiter)
    await clock.advanceAsync(1_000)
    expect((await first).action).toBe('pass')
    // The window is spent; a newcomer with an empty queue waits its own turn.
    const newcomer = limiter.admit({ ip: 'a' }, new Map())
    expect(isPromiseLike(newcomer)).toBe(true)
    await clock.advanceAsync(1_000)
    expect((await newcomer).action).toBe('pass')
  })

  it('refuses at once a request whose wait would pass its timeout', async () => {
    const { clock, limiter } = waiting(10, '500ms')
    await admitLater(limiter)
    clock.advance(400)
    // The next window opens in 600 ms: over the 500 ms timeout, so no pointless sleep.
    const refused = await admitLater(limiter)
    expect(refused.action).toBe('refuse')
    expect(clock.pendingSleeps).toBe(0)
    clock.advance(200)
    const waited = admitLater(limiter)
    await clock.advanceAsync(400)
    expect((await waited).action).toBe('pass')
  })

  it('a request whose client leaves rejects with the abort reason and frees its place', async () => {
    const { clock, limiter } = waiting(1)
    await admitLater(limiter)
    const quitter: FakeRequest = { ip: 'a' }
    const pending = admitLater(limiter, quitter)
    const refused = await admitLater(limiter)
    expect(refused.action).toBe('refuse')
    const reason = new Error('gone')
    quitter.gone?.abort(reason)
    await expect(pending).rejects.toBe(reason)
    const next = admitLater(limiter)
    await clock.advanceAsync(1_000)
    expect((await next).action).toBe('pass')
    expect(clock.pendingSleeps).toBe(0)
  })
})
