import { ManualClock } from '@sluice/core'
import { keyedLimiter, type RateAlgorithm, type Reservation } from '@sluice/keyed'
import { expect, it } from 'vitest'
import { redisStore } from '../src/index'
import { connect, describeRedis, sleep, uniquePrefix } from './helpers'

/** A store on the run's redis-server, on the test's clock, under keys of its own. */
function store(clock: ManualClock) {
  return redisStore({ client: connect(), prefix: uniquePrefix(), clock, timeout: '10s' })
}

describeRedis('keyedLimiter on Redis: bulkheads per key', () => {
  it('enter(key) holds a slot per key across limiters until released; a second release throws', async () => {
    const shared = store(new ManualClock())
    // Two limiters on one store: two processes sharing the bulkhead.
    const [one, two] = [
      keyedLimiter({ max: 2, store: shared }),
      keyedLimiter({ max: 2, store: shared }),
    ]
    const a = await one.enter('db')
    const b = await two.enter('db')
    expect([a?.key, b?.key]).toEqual(['db', 'db'])
    expect(await one.enter('db')).toBeUndefined()
    expect(await two.enter('db')).toBeUndefined()
    expect(await one.enter('other')).toBeDefined()
    await a!.release()
    expect(() => a!.release()).toThrow('the permit of "db" was already released')
    const c = await two.enter('db')
    expect(c).toBeDefined()
    expect((await one.get('db')).remaining).toBe(0)
    await b!.release()
    await c!.release()
    expect((await one.get('db')).remaining).toBe(2)
  })
})

describeRedis('keyedLimiter on Redis: reserve and settle', () => {
  const llm = (clock: ManualClock) =>
    keyedLimiter({
      clock,
      reservationTtl: '10m',
      store: store(clock),
      policies: [
        { name: 'requests', limit: 60, window: '1m' },
        { name: 'tokens', limit: 10_000, window: '1m', algorithm: 'token-bucket' },
        { name: 'monthly', limit: 2_000_000, window: '30d', algorithm: 'fixed-window' },
      ],
    })
  const left = async (limiter: ReturnType<typeof llm>) =>
    (await limiter.get('org')).policies.map((p) => p.remaining)

  it('a streamed 10k-token answer reserved at 1k is charged 10k in all; the next waits out the debt', async () => {
    const clock = new ManualClock()
    const limiter = llm(clock)
    const reservation = await limiter.reserve('org', { requests: 1, tokens: 1000, monthly: 1000 })
    expect(reservation.allowed).toBe(true)
    expect(await left(limiter)).toEqual([59, 9000, 1_999_000])
    const settled = await reservation.settle({ requests: 1, tokens: 11_000, monthly: 11_000 })
    expect(settled.policies.map((p) => [p.policy, p.remaining])).toEqual([
      ['requests', 59],
      ['tokens', 0],
      ['monthly', 1_989_000],
    ])
    // 1,000 tokens beyond the bucket and 1,000 of its own, at 6 ms a token.
    const next = await limiter.reserve('org', { requests: 1, tokens: 1000 })
    expect([next.allowed, next.policy, next.retryAfterMs]).toEqual([false, 'tokens', 12_000])
    // A refusal takes nothing from any policy.
    expect(await left(limiter)).toEqual([59, 0, 1_989_000])
    clock.advance(12_000)
    expect((await limiter.reserve('org', { requests: 1, tokens: 1000 })).allowed).toBe(true)
  })

  it('settles below the estimate by a refund, to 0 as a number or per policy, and only once', async () => {
    const clock = new ManualClock()
    const limiter = llm(clock)
    const first = await limiter.reserve('org', { requests: 1, tokens: 4000, monthly: 4000 })
    await first.settle({ requests: 1, tokens: 1500, monthly: 1500 })
    expect(await left(limiter)).toEqual([59, 8500, 1_998_500])
    expect(() => first.settle(1)).toThrow('it was already settled')
    expect(() => first.cancel()).toThrow('it was already settled')
    // An abandoned job: nothing used, the whole estimate back.
    await (await limiter.reserve('org', { requests: 1, tokens: 2000 })).settle(0)
    await (await limiter.reserve('org', { requests: 1, tokens: 2000 })).settle({
      requests: 0,
      tokens: 0,
    })
    expect(await left(limiter)).toEqual([59, 8500, 1_998_500])
    // A bad actual cost throws before anything is sent; the reservation stays open.
    const open = await limiter.reserve('org', { requests: 1, tokens: 500 })
    expect(() => open.settle(-1)).toThrow(RangeError)
    await open.cancel()
    expect(await left(limiter)).toEqual([59, 8500, 1_998_500])
  })

  it('a settle is one round trip: one EVALSHA giving back, charging debt, or both (per policy) at once', async () => {
    const clock = new ManualClock()
    const client = connect()
    const sent: string[] = []
    const send = client.sendCommand.bind(client)
    client.sendCommand = (command, stream) => {
      sent.push(command.name.toLowerCase())
      return send(command, stream)
    }
    const limiter = keyedLimiter({
      clock,
      store: redisStore({ client, prefix: uniquePrefix(), clock, timeout: '10s' }),
      policies: [
        { name: 'requests', limit: 60, window: '1m' },
        { name: 'tokens', limit: 100_000, window: '1m', algorithm: 'token-bucket' },
        { name: 'monthly', limit: 2_000_000, window: '30d', algorithm: 'fixed-window' },
      ],
    })
    const estimate = { requests: 1, tokens: 4000, monthly: 4000 }
    const settleCalls = async (actual: Parameters<Reservation['settle']>[0]) => {
      const reservation = await limiter.reserve('org', estimate)
      sent.length = 0
      const settled = await reservation.settle(actual)
      const calls = sent.slice()
      return { calls, left: settled.policies.map((p) => p.remaining) }
    }
    // Below the estimate (a refund) and the state after it, in one call.
    expect(await settleCalls({ requests: 1, tokens: 1500, monthly: 1500 })).toEqual({
      calls: ['evalsha'],
      left: [59, 98_500, 1_998_500],
    })
    // Above it (debt).
    expect(await settleCalls({ requests: 1, tokens: 5000, monthly: 5000 })).toEqual({
      calls: ['evalsha'],
      left: [58, 93_500, 1_993_500],
    })
    // Fewer tokens than reserved, more of the month's budget: back and debt in one call.
    expect(await settleCalls({ requests: 1, tokens: 1000, monthly: 6000 })).toEqual({
      calls: ['evalsha'],
      left: [57, 92_500, 1_987_500],
    })
    expect((await limiter.get('org')).policies.map((p) => p.remaining)).toEqual([
      57, 92_500, 1_987_500,
    ])
  })

  it('a reservation left unsettled is given back after its ttl; a late settle charges the whole actual cost', async () => {
    const clock = new ManualClock()
    const limiter = llm(clock)
    const stream = await limiter.reserve('org', { requests: 1, tokens: 1000 })
    expect(await left(limiter)).toEqual([59, 9000, 2_000_000])
    await clock.advanceAsync(600_000)
    // The estimate goes back once the ttl passes (its request left its window already).
    // The expiry's refund is a store call of its own: polled (up to 20 s), not timed.
    for (let i = 0; i < 800 && (await left(limiter))[1] !== 10_000; i++) await sleep(25)
    expect(await left(limiter)).toEqual([60, 10_000, 2_000_000])
    const settled = await stream.settle({ requests: 1, tokens: 12_000 })
    expect(settled.policies.map((p) => [p.policy, p.remaining, p.allowed])).toEqual([
      ['requests', 59, true],
      ['tokens', 0, false],
      ['monthly', 2_000_000, true],
    ])
    expect((await limiter.reserve('org', { requests: 1, tokens: 1 })).retryAfterMs).toBe(12_006)
  })
})

describeRedis(
  'keyedLimiter on Redis: debt, algorithm by algorithm (as on the memory store)',
  () => {
    it.each<[RateAlgorithm, number, number, number]>([
      ['token-bucket', 4500, 16_000, 0],
      ['leaky-bucket', 4500, 25_000, 0],
      ['warm-up', 4500, 66_000, 0],
      ['fixed-window', 4500, 5500, 9],
      ['sliding-window', 4500, 10_500, 9],
    ])(
      '%s, charged at %i ms: refused for %i ms, then %i left',
      async (algorithm, at, waitMs, rest) => {
        for (const how of ['penalty', 'settle'] as const) {
          const clock = new ManualClock()
          const limiter = keyedLimiter({
            algorithm,
            limit: 10,
            window: '10s',
            clock,
            store: store(clock),
            ...(algorithm === 'warm-up' ? { warmUp: '30s' } : {}),
          })
          clock.advance(at)
          const after =
            how === 'penalty'
              ? await limiter.penalty('k', 25)
              : await (await limiter.reserve('k', 1)).settle(25)
          expect([after.allowed, after.remaining, after.retryAfterMs]).toEqual([false, 0, waitMs])
          clock.advance(waitMs - 1)
          expect((await limiter.consume('k')).allowed).toBe(false)
          clock.advance(1)
          const passed = await limiter.consume('k')
          expect([passed.allowed, passed.remaining]).toEqual([true, rest])
        }
      },
    )
  },
)
