import { ManualClock } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import { FALLBACK_KEY, header } from './keys'
import { memoryStore } from './memory-store'
import { RateLimitEngine, type RateLimitOptions } from './rate-limit-engine'

interface FakeRequest {
  ip?: string
  headers?: Record<string, string>
  /** Aborts when the fake client goes away. */
  gone?: AbortController
}
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

const engine = (options: RateLimitOptions<FakeRequest, FakeResponse>) =>
  new RateLimitEngine(options, request, response)

describe('RateLimitEngine', () => {
  it('decides synchronously when every step is synchronous', () => {
    const limiter = engine({ limit: 1, window: '1s' })
    const first = limiter.decide({ ip: '10.0.0.1' }, new Map())
    expect(first).not.toBeInstanceOf(Promise)
    expect(first).toMatchObject({ allowed: true, key: '10.0.0.1', remaining: 0, policy: 'default' })
    expect(limiter.decide({ ip: '10.0.0.1' }, new Map())).toMatchObject({ allowed: false })
  })

  it('counts requests without a key under one shared fallback key', () => {
    const limiter = engine({ limit: 2, key: header('x-user') })
    expect(limiter.decide({}, new Map())).toMatchObject({ allowed: true, key: FALLBACK_KEY })
    expect(limiter.decide({ headers: { 'x-user': '' } }, new Map())).toMatchObject({
      allowed: true,
      key: FALLBACK_KEY,
    })
    expect(limiter.decide({}, new Map())).toMatchObject({ allowed: false, key: FALLBACK_KEY })
  })

  it('shows the tightest policy: the refusing one, with the longest wait', () => {
    const clock = new ManualClock()
    const limiter = engine({
      policies: [
        { name: 'minute', algorithm: 'fixed-window', limit: 1, window: '1m' },
        { name: 'second', algorithm: 'fixed-window', limit: 1, window: '1s' },
      ],
      clock,
    })
    limiter.decide({ ip: 'a' }, new Map())
    clock.advance(250)
    expect(limiter.decide({ ip: 'a' }, new Map())).toMatchObject({
      allowed: false,
      policy: 'minute',
      retryAfterMs: 59_750,
    })
    expect(limiter.retryAfter(limiter.decide({ ip: 'a' }, new Map()) as never)).toBe('60')
  })

  it('refunds only admitted requests, and only when refundWhen says so', async () => {
    const limiter = engine({ limit: 1, refundWhen: (req) => req.headers?.refund === 'yes' })
    const admitted = limiter.decide({ ip: 'a' }, new Map())!
    await limiter.settle({ ip: 'a' }, new Map(), admitted as never)
    expect(limiter.decide({ ip: 'a' }, new Map())).toMatchObject({ allowed: false })
    const other = limiter.decide({ ip: 'b' }, new Map())!
    await limiter.settle({ ip: 'b', headers: { refund: 'yes' } }, new Map(), other as never)
    expect(limiter.decide({ ip: 'b' }, new Map())).toMatchObject({ allowed: true })
  })

  describe('waiting mode', () => {
    const waiting = (maxQueue = 10) => {
      const clock = new ManualClock()
      const limiter = engine({
        algorithm: 'fixed-window',
        limit: 1,
        window: '1s',
        wait: { timeout: '10s', maxQueue },
        clock,
        store: memoryStore({ clock }),
      })
      return { clock, limiter }
    }

    it('admits queued requests in arrival order, one per window', async () => {
      const { clock, limiter } = waiting()
      limiter.decide({ ip: 'a' }, new Map())
      const order: number[] = []
      const queued = [1, 2, 3].map((n) =>
        Promise.resolve(limiter.decide({ ip: 'a' }, new Map())).then((d) => {
          order.push(n)
          return d?.allowed
        }),
      )
      for (let i = 0; i < 3; i++) await clock.advanceAsync(1_000)
      expect(await Promise.all(queued)).toEqual([true, true, true])
      expect(order).toEqual([1, 2, 3])
    })

    it('never lets a newcomer jump the queue', async () => {
      const { clock, limiter } = waiting()
      limiter.decide({ ip: 'a' }, new Map())
      const first = Promise.resolve(limiter.decide({ ip: 'a' }, new Map()))
      await clock.advanceAsync(1_000)
      expect((await first)?.allowed).toBe(true)
      // The window is spent; a newcomer with an empty queue waits its own turn.
      const newcomer = limiter.decide({ ip: 'a' }, new Map())
      expect(newcomer).toBeInstanceOf(Promise)
      await clock.advanceAsync(1_000)
      expect((await newcomer)?.allowed).toBe(true)
    })

    it('a request whose client leaves rejects with the abort reason and frees its place', async () => {
      const { clock, limiter } = waiting(1)
      limiter.decide({ ip: 'a' }, new Map())
      const quitter: FakeRequest = { ip: 'a' }
      const pending = limiter.decide(quitter, new Map())
      const refused = await limiter.decide({ ip: 'a' }, new Map())
      expect(refused?.allowed).toBe(false)
      const reason = new Error('gone')
      quitter.gone?.abort(reason)
      await expect(pending).rejects.toBe(reason)
      const next = limiter.decide({ ip: 'a' }, new Map())
      await clock.advanceAsync(1_000)
      expect((await next)?.allowed).toBe(true)
      expect(clock.pendingSleeps).toBe(0)
    })
  })
})
