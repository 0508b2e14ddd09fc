import { type Carry, ManualClock } from '@sluice/core'
import { memoryStore } from '@sluice/keyed'
import { isPromiseLike } from '@sluice/keyed/store'
import { describe, expect, it } from 'vitest'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import { BulkheadEngine } from './bulkhead-engine'
import { RateLimitEngine, type RateLimitOptions } from './rate-limit-engine'

interface FakeRequest {
  ip?: string
  plan?: 'free' | 'pro'
  gone?: AbortController
}
type FakeResponse = Map<string, string>

const request: RequestAccessors<FakeRequest> = {
  ip: (req) => req.ip ?? '10.0.0.1',
  method: () => 'GET',
  path: () => '/',
  route: () => undefined,
  header: () => undefined,
}
const response: ResponseAccessors<FakeRequest, FakeResponse> = {
  getHeader: (res, name) => res.get(name),
  setHeader: (res, name, value) => void res.set(name, value),
  signal: (req) => {
    req.gone ??= new AbortController()
    return req.gone.signal
  },
}

function engine(options: RateLimitOptions<FakeRequest, FakeResponse>) {
  const clock = options.clock ?? new ManualClock()
  return new RateLimitEngine({
    options: { clock, store: memoryStore({ clock }), ...options },
    request,
    response,
  })
}

type Limiter = RateLimitEngine<FakeRequest, FakeResponse>

/** Admits one request that is answered at once; its action and RateLimit header. */
function admit(limiter: Limiter, req: FakeRequest = {}) {
  const res: FakeResponse = new Map()
  const outcome = limiter.admit(req, res)
  if (isPromiseLike(outcome)) throw new Error('expected a synchronous outcome')
  return {
    action: outcome.action,
    policy: res.get('RateLimit-Policy'),
    header: res.get('RateLimit'),
  }
}

const later = (limiter: Limiter, req: FakeRequest = {}) =>
  Promise.resolve(limiter.admit(req, new Map()))

describe('rateLimit reconfigure', () => {
  it.each([
    // mode, then what is left of 20 after 5 of 10 were used
    ['proportional', 10],
    ['as-is', 5],
    ['additive', 15],
    ['reset', 20],
  ] as const)('%s: 5 of 10 used, then 20 per minute: %d left', (carry, left) => {
    const limiter = engine({ name: 'api', algorithm: 'fixed-window', limit: 10, window: '1m' })
    for (let i = 0; i < 5; i++) expect(admit(limiter).action).toBe('pass')
    limiter.reconfigure({ algorithm: 'fixed-window', limit: 20, window: '1m' }, { carry })
    expect(limiter.policies.map((p) => [p.name, p.limit])).toEqual([['api', 20]])
    const next = admit(limiter)
    expect(next.policy).toBe('"api";q=20;w=60')
    expect(next.header).toBe(`"api";r=${left - 1};t=60`)
  })

  it('an unnamed policy keeps its name, so a raised limit gives no fresh budget', () => {
    const limiter = engine({ limit: 2, window: '1m' })
    admit(limiter)
    admit(limiter)
    expect(admit(limiter).action).toBe('refuse')
    limiter.reconfigure({ limit: 4, window: '1m' })
    expect(limiter.policies[0]?.name).toBe('2-per-1m')
    expect(admit(limiter).action).toBe('refuse')
  })

  it('a limit function that returns another spec for a key carries its state (plans)', () => {
    const limiter = engine({
      name: 'api',
      algorithm: 'fixed-window',
      window: '1m',
      limit: (req) => (req.plan === 'pro' ? 20 : 10),
    })
    for (let i = 0; i < 5; i++) admit(limiter, { plan: 'free' })
    // Upgraded mid-window: 5 of 10 used is 10 of 20 used, not a fresh 20.
    expect(admit(limiter, { plan: 'pro' }).header).toBe('"api";r=9;t=60')
    // Downgraded again: 9 of 20 left is 4 of 10 left (rounded down), 3 after this request.
    expect(admit(limiter, { plan: 'free' }).header).toBe('"api";r=3;t=60')
  })

  it.each([
    // mode, when the queued request is admitted (ms)
    ['proportional', 1000], // 0 of 1 left is 0 of 2 left: served at its time
    ['additive', 0], // the permit added is free now: the waiter asks again and passes
  ] as const)(
    '%s: a request waiting when the limit is raised is admitted at %d ms',
    async (carry, at) => {
      const clock = new ManualClock()
      const limiter = engine({
        name: 'api',
        algorithm: 'fixed-window',
        limit: 1,
        window: '1s',
        wait: { timeout: '10s' },
        clock,
      })
      expect((await later(limiter)).action).toBe('pass')
      const waiting = later(limiter).then((outcome) => [outcome.action, clock.now()])
      await clock.advanceAsync(0)
      limiter.reconfigure({ algorithm: 'fixed-window', limit: 2, window: '1s' }, { carry })
      await clock.advanceAsync(1000)
      expect(await waiting).toEqual(['pass', at])
    },
  )

  describe('bad input is refused, and the old spec keeps working', () => {
    const limiter = engine({ name: 'api', algorithm: 'fixed-window', limit: 3, window: '1m' })
    it.each([
      [
        'another algorithm',
        () => limiter.reconfigure({ algorithm: 'token-bucket', limit: 5, window: '1m' }),
        /^rateLimit\.reconfigure: "algorithm" must stay 'fixed-window' for policy "api" .*got 'token-bucket'$/,
      ],
      [
        'a spec that fails validation',
        () => limiter.reconfigure({ algorithm: 'fixed-window', limit: -1, window: '1m' }),
        /^rateLimit\.reconfigure: "limit" must be a positive integer, got -1$/,
      ],
      [
        'a misspelt carry',
        () =>
          limiter.reconfigure({ algorithm: 'fixed-window', limit: 5 }, { carry: 'as_is' as Carry }),
        /^rateLimit\.reconfigure: "carry" must be one of 'proportional', 'as-is', 'reset', 'additive' \(did you mean 'as-is'\?\), got "as_is"$/,
      ],
      [
        'an option that is not a policy',
        () => limiter.reconfigure({ limit: 5, headers: false } as never),
        /^rateLimit\.reconfigure: unknown option "headers" \(only the policies change in reconfigure/,
      ],
    ] as const)('%s', (_, call, message) => {
      expect(call).toThrow(message)
      expect(limiter.policies.map((p) => p.limit)).toEqual([3])
      expect(admit(limiter).policy).toBe('"api";q=3;w=60')
    })
  })
})

describe('bulkhead reconfigure', () => {
  const setup = (max: number, maxQueue = 0) => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const engine = new BulkheadEngine<FakeRequest, FakeResponse>({
      options: { store, clock, max, maxQueue },
      request,
      response,
    })
    return { clock, store, engine }
  }
  const enter = (engine: BulkheadEngine<FakeRequest, FakeResponse>) => {
    const outcome = engine.admit({}, new Map())
    if (isPromiseLike(outcome)) throw new Error('expected a synchronous outcome')
    return outcome as typeof outcome & {
      workDone(failed: boolean): void
      done(gone: boolean): void
    }
  }
  const over = (outcome: ReturnType<typeof enter>) => {
    outcome.workDone(false)
    outcome.done(false)
  }

  it('lowering max below the slots held refuses newcomers until enough are released, revoking none', () => {
    const { store, engine } = setup(3)
    const held = [enter(engine), enter(engine), enter(engine)]
    expect(held.map((o) => o.action)).toEqual(['pass', 'pass', 'pass'])
    engine.reconfigure({ max: 1 })
    expect(engine.policies[0]?.limit).toBe(1)
    expect(store.inFlight).toBe(3)
    expect(enter(engine).action).toBe('refuse')
    over(held[0]!)
    over(held[1]!)
    expect(enter(engine).action).toBe('refuse') // 1 held, max 1
    over(held[2]!)
    expect(enter(engine).action).toBe('pass')
  })

  it('raising max serves the queued requests at once', async () => {
    const { engine } = setup(1, 5)
    const first = enter(engine)
    expect(first.action).toBe('pass')
    const queued = [later2(engine), later2(engine)]
    expect(engine.queued()).toBe(2)
    engine.reconfigure({ max: 3 })
    expect((await Promise.all(queued)).map((o) => o.action)).toEqual(['pass', 'pass'])
  })

  it('refuses a bad max and another option, the old max left working', () => {
    const { engine } = setup(2)
    expect(() => engine.reconfigure({ max: 0 })).toThrow(
      'bulkhead.reconfigure: "max" must be a positive integer, got 0',
    )
    expect(() => engine.reconfigure({ max: 3, maxQueue: 2 } as never)).toThrow(
      /^bulkhead\.reconfigure: unknown option "maxQueue"/,
    )
    expect(() => engine.reconfigure({ max: 3 }, { carry: 'none' as Carry })).toThrow(
      /^bulkhead\.reconfigure: "carry" must be one of/,
    )
    expect(engine.policies[0]?.limit).toBe(2)
    expect([enter(engine).action, enter(engine).action, enter(engine).action]).toEqual([
      'pass',
      'pass',
      'refuse',
    ])
  })
})

const later2 = (engine: BulkheadEngine<FakeRequest, FakeResponse>) =>
  Promise.resolve(engine.admit({}, new Map()))
