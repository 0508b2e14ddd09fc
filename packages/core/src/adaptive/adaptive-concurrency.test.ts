import { getEventListeners } from 'node:events'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Downstream } from '../../test/downstream'
import { flush, track } from '../../test/helpers'
import { ManualClock } from '../clock'
import { bulkheaded } from '../decorators/bulkheaded'
import { RateLimitError } from '../errors'
import {
  type AdaptiveConcurrencyLimiter,
  type AdaptiveConcurrencyOptions,
  type AdaptivePermit,
  adaptiveConcurrency,
  type LimitChange,
} from './adaptive-concurrency'

/** A limiter on a fresh clock, recording every limit change with the time it happened. */
function setup(options: AdaptiveConcurrencyOptions = {}) {
  const clock = new ManualClock()
  const changes: (LimitChange & { at: number })[] = []
  const limiter = adaptiveConcurrency({
    clock,
    random: () => 0.5,
    onLimitChange: (change) => changes.push({ ...change, at: clock.now() }),
    ...options,
  })
  return { clock, changes, limiter }
}

/** Fills the limiter, lets `rttMs` pass, releases everything: one round of full use. */
function round(limiter: AdaptiveConcurrencyLimiter, clock: ManualClock, rttMs: number): void {
  const permits: AdaptivePermit[] = []
  for (let p = limiter.tryEnter(); p !== undefined; p = limiter.tryEnter()) permits.push(p)
  clock.advance(rttMs)
  for (const permit of permits) permit.release()
}

/** Rounds of `rttMs` until the probe under way ends. */
function finishProbe(limiter: AdaptiveConcurrencyLimiter, clock: ManualClock, rttMs: number) {
  while (limiter.probing) round(limiter, clock, rttMs)
}

/** The lowest and highest limit over `ms`, read every 100 ms while the downstream runs. */
function limitRange(limiter: AdaptiveConcurrencyLimiter, downstream: Downstream, ms: number) {
  const seen: number[] = []
  for (let t = 0; t < ms; t += 100) {
    downstream.run(100)
    seen.push(limiter.limit)
  }
  return [Math.min(...seen), Math.max(...seen)]
}

describe('adaptiveConcurrency', () => {
  it('reports its configuration, and starts by probing at concurrency 3', () => {
    const limiter = adaptiveConcurrency()
    expect(limiter).toMatchObject({
      name: 'adaptive-concurrency',
      algorithm: 'gradient2',
      minLimit: 1,
      maxLimit: 1000,
      maxQueue: 0,
      limit: 3,
      max: 3,
      inFlight: 0,
      queued: 0,
      probing: true,
      noLoadRtt: undefined,
    })
    expect(adaptiveConcurrency({ algorithm: 'aimd', name: 'db', maxQueue: 5 })).toMatchObject({
      name: 'db',
      algorithm: 'aimd',
      maxQueue: 5,
    })
  })

  it('takes the mean of 50 probe requests as the no-load latency, then moves to initial', () => {
    const { clock, changes, limiter } = setup()
    // Rounds of 3 taking 10 ms: the 50th sample lands in the 17th round, at 170 ms.
    finishProbe(limiter, clock, 10)
    expect(clock.now()).toBe(170)
    expect([limiter.probing, limiter.noLoadRtt, limiter.limit, limiter.max]).toEqual([
      false,
      10,
      20,
      20,
    ])
    expect(changes).toEqual([
      {
        limit: 20,
        previous: 3,
        algorithm: 'gradient2',
        reason: 'probed',
        noLoadRtt: 10,
        at: 170,
      },
    ])
  })

  it('probes with probeConcurrency and probeSamples, and starts from initial', () => {
    const { clock, limiter } = setup({ probeConcurrency: 5, probeSamples: 10, initial: 7 })
    expect(limiter.limit).toBe(5)
    round(limiter, clock, 4)
    round(limiter, clock, 8)
    expect([limiter.limit, limiter.noLoadRtt, clock.now()]).toEqual([7, 6, 12])
  })

  it('defaults initial to 20 clamped into [min, max]', () => {
    for (const [options, initial] of [
      [{ max: 10 }, 10],
      [{ min: 30 }, 30],
    ] as const) {
      const { clock, limiter } = setup({ ...options, probeSamples: 1 })
      round(limiter, clock, 10)
      expect(limiter.limit).toBe(initial)
    }
  })

  // A downstream of 40 workers, 10 ms each (see test/downstream.ts): 4 requests per ms at
  // most, and every request past 40 in flight is queueing: latency = 10 ms × limit / 40.
  describe.each([
    {
      algorithm: 'gradient2',
      // Settles where 1.5 × 10 / rtt × L + √L = L: with rtt = 10 × L / 40, L = 60 + √L ≈ 68.2.
      healthy: [68, 69],
      // With 10 workers, L = 15 + √L ≈ 19.4.
      sick: [19, 20],
    },
    {
      algorithm: 'vegas',
      // Holds while the queue L − 40 is between 3 and 6 × log10 L: L in [45, 50].
      healthy: [47, 47],
      // With 10 workers the queue is L − 10, held between 3.7 and 7.4: L in [14, 17].
      sick: [17, 17],
    },
    {
      algorithm: 'aimd',
      // +1 per window until latency passes twice the no-load 10 ms (L > 80), then × 0.9.
      healthy: [72, 81],
      // With 10 workers congestion starts past L = 20.
      sick: [18, 21],
    },
  ] as const)('$algorithm', ({ algorithm, healthy, sick }) => {
    it('rises under a healthy downstream, falls when latency rises, and recovers', () => {
      const { clock, limiter } = setup({ algorithm })
      const downstream = new Downstream(limiter, clock, { workers: 40, serviceMs: 10 })
      downstream.run(7000)
      expect(limitRange(limiter, downstream, 3000)).toEqual(healthy)
      downstream.health = { workers: 10, serviceMs: 10 }
      downstream.run(7000)
      expect(limitRange(limiter, downstream, 3000)).toEqual(sick)
      downstream.health = { workers: 40, serviceMs: 10 }
      downstream.run(7000)
      const [low, high] = limitRange(limiter, downstream, 3000)
      // Vegas holds anywhere in its band, so it may settle on another value than before.
      expect(low).toBeGreaterThanOrEqual(algorithm === 'vegas' ? 45 : healthy[0])
      expect(high).toBeLessThanOrEqual(algorithm === 'vegas' ? 50 : healthy[1])
      expect(limiter.probing).toBe(false)
    })
  })

  it('vegas and aimd fall when requests drop; gradient2 reads latency only', () => {
    const fallen: Record<string, number[]> = {}
    for (const algorithm of ['gradient2', 'vegas', 'aimd'] as const) {
      const { clock, limiter } = setup({ algorithm })
      const downstream = new Downstream(limiter, clock, { workers: 40, serviceMs: 10 })
      downstream.run(5000)
      const before = limiter.limit
      downstream.health = { workers: 40, serviceMs: 10, drops: () => true }
      downstream.run(1000)
      fallen[algorithm] = [before, limiter.limit]
    }
    // Vegas takes log10(limit) per window, AIMD 10 %: ten windows of drops.
    expect(fallen).toEqual({ gradient2: [68, 68], vegas: [47, 33], aimd: [67, 21] })
  })

  it('one fast request does not move the no-load latency: it is a mean over the probe', () => {
    const { clock, limiter } = setup({ algorithm: 'vegas', probeSamples: 4 })
    const permits = [limiter.tryEnter(), limiter.tryEnter(), limiter.tryEnter()]
    clock.advance(1)
    permits[0]?.release()
    clock.advance(9)
    permits[1]?.release()
    permits[2]?.release()
    round(limiter, clock, 10)
    expect(limiter.noLoadRtt).toBe(7.75)
  })

  it('a window lasts updateInterval and twice the no-load latency, with 10 samples', () => {
    // AIMD adds one per window on a healthy downstream: each change marks a window's end.
    const updates = (options: AdaptiveConcurrencyOptions, serviceMs: number, ms: number) => {
      const { clock, changes, limiter } = setup({ algorithm: 'aimd', ...options })
      new Downstream(limiter, clock, { workers: 1000, serviceMs }).run(ms)
      return changes.filter((c) => c.reason === 'update').map((c) => [c.at, c.limit])
    }
    // No-load 100 ms: the probe ends at 1700 ms, then windows of 200 ms.
    expect(updates({}, 100, 2500)).toEqual([
      [1900, 21],
      [2100, 22],
      [2300, 23],
      [2500, 24],
    ])
    expect(updates({ updateInterval: '500ms' }, 100, 2800)).toEqual([
      [2200, 21],
      [2700, 22],
    ])
    // One request at a time taking 30 ms after a probe of 3 at concurrency 1 (0–90 ms):
    // 10 samples take until 390 ms, not 100 ms more; then 2 at a time until 540 ms, and so on.
    expect(updates({ initial: 1, probeConcurrency: 1, probeSamples: 3 }, 30, 1000)).toEqual([
      [390, 2],
      [540, 3],
      [660, 4],
      [780, 5],
      [900, 6],
    ])
  })

  it('keeps the limit within [min, max]', () => {
    const high = setup({ max: 30 })
    const roomy = new Downstream(high.limiter, high.clock, { workers: 40, serviceMs: 10 })
    expect(limitRange(high.limiter, roomy, 10_000)).toEqual([3, 30])
    // Every request dropped: AIMD backs off by 10 % a window, down to min and no further.
    const low = setup({ min: 25, algorithm: 'aimd' })
    const failing = new Downstream(low.limiter, low.clock, {
      workers: 40,
      serviceMs: 10,
      drops: () => true,
    })
    failing.run(1000)
    expect(limitRange(low.limiter, failing, 10_000)).toEqual([25, 25])
  })

  it('probes again after probeInterval plus jitter drawn from random', () => {
    for (const [random, due] of [
      [0, 30_000],
      [0.5, 32_250],
      [0.999, 34_495.5],
    ] as const) {
      const { clock, limiter } = setup({ random: () => random })
      finishProbe(limiter, clock, 10)
      const probedAt = clock.now()
      clock.set(probedAt + due - 1)
      limiter.tryEnter()?.release()
      expect(limiter.probing).toBe(false)
      clock.set(probedAt + due)
      limiter.tryEnter()?.release()
      expect([limiter.probing, limiter.limit]).toEqual([true, 3])
    }
    const { clock, limiter } = setup({ probeInterval: '1s', probeJitter: 0 })
    finishProbe(limiter, clock, 10)
    clock.advance(1000)
    limiter.tryAcquire()
    expect(limiter.probing).toBe(true)
  })

  it('a probe counts only its own requests, and hands back the limit it took', () => {
    const { clock, changes, limiter } = setup({ probeInterval: '1s', probeJitter: 0 })
    finishProbe(limiter, clock, 10)
    const earlier = Array.from({ length: 20 }, () => limiter.tryEnter() as AdaptivePermit)
    clock.advance(1000)
    expect(limiter.tryEnter()).toBeUndefined()
    expect([limiter.probing, limiter.limit]).toEqual([true, 3])
    // Requests admitted before the probe finish now, slowly: the old queue, not the no-load time.
    for (const permit of earlier) permit.release()
    finishProbe(limiter, clock, 20)
    expect([limiter.noLoadRtt, limiter.limit]).toEqual([20, 20])
    expect(changes.map((c) => [c.reason, c.previous, c.limit, c.noLoadRtt])).toEqual([
      ['probed', 3, 20, 10],
      ['probe', 20, 3, 10],
      ['probed', 3, 20, 20],
    ])
  })

  it('probes again after 5 windows in a row at the minimum', () => {
    const { clock, changes, limiter } = setup({ algorithm: 'aimd' })
    const downstream = new Downstream(limiter, clock, {
      workers: 40,
      serviceMs: 10,
      drops: () => true,
    })
    downstream.run(3000)
    const atMin = changes.find((c) => c.limit === 1)
    const probe = changes.find((c) => c.reason === 'probe')
    // Windows of 100 ms at limit 1 (10 samples each): the window that reached the minimum
    // and four more, so the probe starts 400 ms later.
    expect([atMin?.at, probe?.at, probe?.previous, probe?.limit]).toEqual([1570, 1970, 1, 3])
  })

  describe('permits', () => {
    it('are freed by `using`; a second explicit release throws', () => {
      const { limiter } = setup()
      {
        using permit = limiter.tryEnter(2)
        expect([permit?.permits, limiter.inFlight]).toEqual([2, 2])
        expect(limiter.tryEnter(2)).toBeUndefined()
      }
      expect(limiter.inFlight).toBe(0)
      const permit = limiter.tryEnter() as AdaptivePermit
      permit.release({ dropped: true })
      permit[Symbol.dispose]()
      expect(() => permit.release()).toThrow(
        new Error('adaptiveConcurrency: this permit (1) was already released'),
      )
      expect(limiter.inFlight).toBe(0)
    })

    it('tryAcquire and release only count: they record no latency', () => {
      const { clock, limiter } = setup({ probeSamples: 1 })
      for (let i = 0; i < 100; i++) {
        expect(limiter.tryAcquire(3)).toBe(true)
        expect([limiter.tryAcquire(), limiter.availablePermits()]).toEqual([false, 0])
        clock.advance(10)
        limiter.release(3)
      }
      expect([limiter.probing, limiter.limit]).toEqual([true, 3])
      expect(() => limiter.release()).toThrow(
        new RangeError('adaptiveConcurrency.release: cannot release 1 permit(s), only 0 held'),
      )
      expect(() => limiter.tryAcquire(0)).toThrow(RangeError)
      expect(() => limiter.tryEnter(1.5)).toThrow(RangeError)
    })
  })

  describe('enter', () => {
    it('waits in FIFO order; a rising limit lets waiters in', async () => {
      const { clock, limiter } = setup({ maxQueue: 5, probeSamples: 1 })
      const held = limiter.tryEnter() as AdaptivePermit
      // Five permits are more than the probe's 3 but within max: they wait for the limit.
      const big = track(limiter.enter({ permits: 5 }))
      const small = track(limiter.enter())
      await flush()
      expect([big.status, small.status, limiter.queued]).toEqual(['pending', 'pending', 2])
      clock.advance(10)
      held.release()
      await flush()
      expect([limiter.limit, big.status, small.status, limiter.inFlight]).toEqual([
        20,
        'resolved',
        'resolved',
        6,
      ])
    })

    it("a waiter's latency starts when it is granted, not when it queued", async () => {
      const { clock, limiter } = setup({ maxQueue: 1, probeSamples: 4 })
      const held = [limiter.tryEnter(), limiter.tryEnter(), limiter.tryEnter()]
      const waiting = limiter.enter()
      clock.advance(50)
      for (const permit of held) permit?.release()
      const permit = await waiting
      clock.advance(10)
      permit.release()
      expect(limiter.noLoadRtt).toBe((50 + 50 + 50 + 10) / 4)
    })

    it('refuses when the queue is full, for a zero timeout, and beyond maxLimit', async () => {
      const { limiter } = setup({ max: 10, maxQueue: 1, name: 'api' })
      limiter.tryAcquire(3)
      await expect(limiter.enter({ timeout: 0 })).rejects.toMatchObject({
        code: 'ERR_SLUICE_TIMEOUT',
        limiter: 'api',
      })
      void limiter.enter()
      const full = await limiter.enter().catch((e: unknown) => e)
      expect(full).toBeInstanceOf(RateLimitError)
      expect(full).toMatchObject({ code: 'ERR_SLUICE_QUEUE_FULL', limiter: 'api' })
      await expect(limiter.enter({ permits: 11 })).rejects.toMatchObject({
        code: 'ERR_SLUICE_LIMITED',
        retryAfterMs: Number.POSITIVE_INFINITY,
      })
      await expect(limiter.enter({ permits: 0 })).rejects.toThrow(RangeError)
    })

    it('times out through the clock, and leaves nothing behind when aborted', async () => {
      const { clock, limiter } = setup({ maxQueue: 5 })
      limiter.tryAcquire(3)
      const timed = track(limiter.enter({ timeout: '100ms' }))
      clock.advance(99)
      await flush()
      expect(timed.status).toBe('pending')
      clock.advance(1)
      await flush()
      expect(timed.reason).toMatchObject({ code: 'ERR_SLUICE_TIMEOUT' })
      await expect(limiter.enter({ signal: AbortSignal.abort('early') })).rejects.toBe('early')
      const controller = new AbortController()
      const aborted = limiter.enter({ signal: controller.signal, timeout: '1m' })
      controller.abort('late')
      await expect(aborted).rejects.toBe('late')
      expect([limiter.queued, limiter.inFlight, clock.pendingSleeps]).toEqual([0, 3, 0])
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    })
  })

  describe('onLimitChange', () => {
    afterEach(() => {
      vi.unstubAllGlobals()
    })

    it('a listener that throws fails neither the release, the limiter nor other listeners', () => {
      const later: (() => void)[] = []
      vi.stubGlobal('queueMicrotask', (task: () => void) => later.push(task))
      const clock = new ManualClock()
      const limiter = adaptiveConcurrency({
        clock,
        probeSamples: 1,
        onLimitChange: () => {
          throw new Error('listener bug')
        },
      })
      const heard: number[] = []
      limiter.subscribe(({ limit }) => heard.push(limit))
      const permit = limiter.tryEnter() as AdaptivePermit
      expect(() => permit.release()).not.toThrow()
      expect([limiter.limit, limiter.inFlight, heard]).toEqual([20, 0, [20]])
      expect(later).toHaveLength(1)
      expect(() => later[0]?.()).toThrow('listener bug')
    })

    it('subscribe adds a listener after creation, until its unsubscribe is called', () => {
      const { clock, changes, limiter } = setup({ probeInterval: '1s', probeJitter: 0 })
      const heard: string[] = []
      const listener = (change: LimitChange) => heard.push(`${change.reason} ${change.limit}`)
      const unsubscribe = limiter.subscribe(listener)
      limiter.subscribe(listener)
      finishProbe(limiter, clock, 10)
      unsubscribe()
      unsubscribe()
      clock.advance(1000)
      limiter.tryEnter()
      expect(heard).toEqual(['probed 20'])
      expect(changes.map((c) => `${c.reason} ${c.limit}`)).toEqual(['probed 20', 'probe 3'])
      expect(() => limiter.subscribe('log' as never)).toThrow(
        new TypeError('adaptiveConcurrency.subscribe: "listener" must be a function, got "log"'),
      )
    })
  })

  describe('aborted requests', () => {
    it('are no latency samples: clients hanging up during the probe do not make it look fast', () => {
      const { clock, changes, limiter } = setup({ algorithm: 'vegas' })
      // Each round of 3: one client hangs up after 1 ms, two requests take 10 ms.
      const round = () => {
        const [gone, a, b] = [limiter.tryEnter(), limiter.tryEnter(), limiter.tryEnter()]
        clock.advance(1)
        gone?.release({ aborted: true })
        clock.advance(9)
        a?.release()
        b?.release()
      }
      while (limiter.probing) round()
      // 50 samples at 2 a round: 25 rounds. Counting the hang-ups would give (1 + 10 + 10) / 3.
      expect([clock.now(), limiter.noLoadRtt, limiter.limit]).toEqual([250, 10, 20])
      // In a window too: 20 in flight, a quarter hang up at once, the rest take 10 ms.
      for (let i = 0; i < 20; i++) {
        const permits = Array.from({ length: 20 }, () => limiter.tryEnter()!)
        for (const p of permits.slice(0, 5)) p.release({ aborted: true })
        clock.advance(10)
        for (const p of permits.slice(5)) p.release()
      }
      const updates = changes.filter((c) => c.reason === 'update')
      expect(updates.length).toBeGreaterThan(0)
      expect(updates.every((c) => c.rtt === 10)).toBe(true)
    })

    it('are no drops either: hang-ups leave AIMD growing where drops shrink it', () => {
      const run = (outcome: { aborted: true } | { dropped: true }) => {
        const { clock, limiter } = setup({ algorithm: 'aimd', probeSamples: 3 })
        finishProbe(limiter, clock, 10)
        for (let i = 0; i < 30; i++) {
          const permits = Array.from({ length: limiter.limit }, () => limiter.tryEnter()!)
          clock.advance(10)
          permits[0]!.release(outcome)
          for (const p of permits.slice(1)) p.release()
        }
        return limiter.limit
      }
      // 30 rounds of 10 ms are 3 windows of updateInterval (100 ms): from 20, AIMD adds 1 a
      // window (23), or backs off on a drop: 18, 16, 14.
      expect([run({ aborted: true }), run({ dropped: true })]).toEqual([23, 14])
    })
  })

  describe('priorities', () => {
    it("a partition's share follows the live limit", async () => {
      const { clock, limiter } = setup({ partitions: { sheddable: 0.5 }, probeSamples: 3 })
      const critical = [0, 1, 2].map(() => limiter.tryEnter({ priority: 'critical' })!)
      // Probing at 3: sheddable is owed floor(1.5) = 1 permit.
      const owed = track(limiter.enter({ priority: 'sheddable' }))
      await expect(limiter.enter({ priority: 'sheddable' })).rejects.toMatchObject({
        code: 'ERR_SLUICE_QUEUE_FULL',
        partition: 'sheddable',
        message:
          'adaptive-concurrency: 3 in flight and the wait queue is full (maxQueue 0) (partition "sheddable")',
      })
      clock.advance(10)
      for (const permit of critical) permit.release()
      await flush()
      expect([owed.status, limiter.probing, limiter.limit]).toEqual(['resolved', false, 20])
      // At 20, sheddable is owed 10: it holds 1, 9 more may wait, a tenth may not.
      while (limiter.tryEnter({ priority: 'critical' }) !== undefined);
      const waiting = Array.from({ length: 10 }, () =>
        track(limiter.enter({ priority: 'sheddable' })),
      )
      await flush()
      expect(waiting.map((w) => w.status).filter((s) => s === 'pending')).toHaveLength(9)
      expect(waiting[9]?.status).toBe('rejected')
    })
  })

  it('works wherever a concurrency limiter does: bulkheaded sees the live limit', async () => {
    const { clock, limiter } = setup({ probeSamples: 3 })
    const call = bulkheaded(limiter)(async (ms: number) => clock.sleep(ms))
    const calls = [call(10), call(10), call(10)]
    expect(() => call(10)).toThrow(
      new RateLimitError('ERR_SLUICE_LIMITED', {
        limiter: 'adaptive-concurrency',
        message: 'adaptive-concurrency: all 3 permits are in flight',
      }),
    )
    await clock.advanceAsync(10)
    await Promise.all(calls)
    expect([limiter.noLoadRtt, limiter.limit, limiter.max]).toEqual([10, 20, 20])
  })
})

describe('adaptiveConcurrency options', () => {
  const DURATION_RULE =
    "must be a duration (milliseconds as a non-negative number, or a string such as '250ms', '1.5s', '5m', '2h', '1d')"

  // (options, error class, exact message): every option is checked at construction.
  it.each([
    [null, TypeError, 'adaptiveConcurrency: options must be an object, got null'],
    [{ maxLimt: 10 }, TypeError, 'adaptiveConcurrency: unknown option "maxLimt" (use "max")'],
    [
      { initialLimit: 10 },
      TypeError,
      'adaptiveConcurrency: unknown option "initialLimit" (use "initial")',
    ],
    [
      { maxConcurrency: 10 },
      TypeError,
      'adaptiveConcurrency: unknown option "maxConcurrency" (use "max")',
    ],
    [
      { tolerence: 2 },
      TypeError,
      'adaptiveConcurrency: unknown option "tolerence" (did you mean "tolerance"?)',
    ],
    [
      { algorithm: 'vegas', probeIntreval: '1s' },
      TypeError,
      'adaptiveConcurrency: unknown option "probeIntreval" (did you mean "probeInterval"?)',
    ],
    [{ colour: 'blue' }, TypeError, 'adaptiveConcurrency: unknown option "colour"'],
    [
      { algorithm: 'vegas', tolerance: 2 },
      TypeError,
      'adaptiveConcurrency: option "tolerance" is for algorithm "gradient2" or "aimd", not "vegas"',
    ],
    [
      { alpha: 2 },
      TypeError,
      'adaptiveConcurrency: option "alpha" is for algorithm "vegas", not "gradient2"',
    ],
    [
      { algorithm: 'cubic' },
      TypeError,
      `adaptiveConcurrency: "algorithm" must be one of 'gradient2', 'vegas', 'aimd', got "cubic"`,
    ],
    [{ min: 0 }, RangeError, 'adaptiveConcurrency: "min" must be a positive integer, got 0'],
    [{ max: 2.5 }, RangeError, 'adaptiveConcurrency: "max" must be a positive integer, got 2.5'],
    [{ max: '10' }, TypeError, 'adaptiveConcurrency: "max" must be a positive integer, got "10"'],
    [
      { min: 10, max: 5 },
      RangeError,
      'adaptiveConcurrency: "max" must be at least "min" (10), got 5',
    ],
    [
      { min: 5, max: 50, initial: 60 },
      RangeError,
      'adaptiveConcurrency: "initial" must be an integer in [min, max] = [5, 50], got 60',
    ],
    [
      { min: 5, initial: 2 },
      RangeError,
      'adaptiveConcurrency: "initial" must be an integer in [min, max] = [5, 1000], got 2',
    ],
    [
      { maxQueue: -1 },
      RangeError,
      'adaptiveConcurrency: "maxQueue" must be a non-negative integer or Infinity, got -1',
    ],
    [
      { updateInterval: 0 },
      RangeError,
      'adaptiveConcurrency: "updateInterval" must be a positive duration, got 0',
    ],
    [
      { probeInterval: '1 min' },
      RangeError,
      `adaptiveConcurrency: "probeInterval" ${DURATION_RULE}, got "1 min" (did you mean '1m'?)`,
    ],
    [
      { probeJitter: 2 },
      RangeError,
      'adaptiveConcurrency: "probeJitter" must be a number in [0, 1], got 2',
    ],
    [
      { probeJitter: '0.1' },
      TypeError,
      'adaptiveConcurrency: "probeJitter" must be a number in [0, 1], got "0.1"',
    ],
    [
      { probeConcurrency: 0 },
      RangeError,
      'adaptiveConcurrency: "probeConcurrency" must be a positive integer, got 0',
    ],
    [
      { probeSamples: 1.5 },
      RangeError,
      'adaptiveConcurrency: "probeSamples" must be a positive integer, got 1.5',
    ],
    [
      { onLimitChange: 'log' },
      TypeError,
      'adaptiveConcurrency: "onLimitChange" must be a function, got "log"',
    ],
    [{ random: 0.5 }, TypeError, 'adaptiveConcurrency: "random" must be a function, got 0.5'],
    [{ name: '' }, TypeError, 'adaptiveConcurrency: "name" must be a non-empty string, got ""'],
    [
      { clock: {} },
      TypeError,
      'adaptiveConcurrency: "clock" must be an object with now() and sleep(), got an object',
    ],
    [
      { tolerance: 0.9 },
      RangeError,
      'adaptiveConcurrency: "tolerance" must be a finite number of at least 1, got 0.9',
    ],
    [
      { smoothing: 0 },
      RangeError,
      'adaptiveConcurrency: "smoothing" must be a number in (0, 1], got 0',
    ],
    [
      { queueSize: -1 },
      RangeError,
      'adaptiveConcurrency: "queueSize" must be a finite non-negative number or a function of the limit, got -1',
    ],
    [
      { queueSize: '4' },
      TypeError,
      'adaptiveConcurrency: "queueSize" must be a finite non-negative number or a function of the limit, got "4"',
    ],
    [
      { algorithm: 'vegas', alpha: 0 },
      RangeError,
      'adaptiveConcurrency: "alpha" must be a finite positive number, got 0',
    ],
    [
      { algorithm: 'vegas', beta: 2 },
      RangeError,
      'adaptiveConcurrency: "alpha" must be less than "beta", got alpha 3 and beta 2',
    ],
    [
      { algorithm: 'vegas', smoothing: 1.5 },
      RangeError,
      'adaptiveConcurrency: "smoothing" must be a number in (0, 1], got 1.5',
    ],
    [
      { algorithm: 'aimd', backoffRatio: 1 },
      RangeError,
      'adaptiveConcurrency: "backoffRatio" must be a number in [0.5, 1), got 1',
    ],
    [
      { algorithm: 'aimd', tolerance: 0.5 },
      RangeError,
      'adaptiveConcurrency: "tolerance" must be a number of at least 1 (Infinity: drops only), got 0.5',
    ],
    [
      { algorithm: 'aimd', tolerance: Number.NaN },
      RangeError,
      'adaptiveConcurrency: "tolerance" must be a number of at least 1 (Infinity: drops only), got NaN',
    ],
  ])('refuses %j', (options, ErrorClass, message) => {
    expect(() => adaptiveConcurrency(options as never)).toThrow(new ErrorClass(message))
    expect(() => adaptiveConcurrency(options as never)).toThrow(ErrorClass)
  })

  it("refuses another algorithm's knob when type-checked too", () => {
    // @ts-expect-error: alpha is a Vegas knob, and the default algorithm is Gradient2
    expect(() => adaptiveConcurrency({ alpha: 2 })).toThrow(TypeError)
    // @ts-expect-error: backoffRatio is an AIMD knob
    expect(() => adaptiveConcurrency({ algorithm: 'vegas', backoffRatio: 0.8 })).toThrow(TypeError)
    // @ts-expect-error: a misspelt option
    expect(() => adaptiveConcurrency({ maxLimt: 10 })).toThrow(TypeError)
  })

  it('accepts every option of its algorithm', () => {
    const common = {
      initial: 10,
      min: 2,
      max: 500,
      maxQueue: Number.POSITIVE_INFINITY,
      updateInterval: '250ms',
      probeInterval: '1m',
      probeJitter: 0,
      probeConcurrency: 4,
      probeSamples: 20,
      onLimitChange: () => {},
      random: () => 0,
      name: 'db',
      clock: new ManualClock(),
    } as const
    expect(
      adaptiveConcurrency({ ...common, tolerance: 2, smoothing: 0.5, queueSize: () => 3 }).limit,
    ).toBe(4)
    expect(
      adaptiveConcurrency({ ...common, algorithm: 'vegas', alpha: 2, beta: 4, smoothing: 1 })
        .algorithm,
    ).toBe('vegas')
    expect(
      adaptiveConcurrency({ ...common, algorithm: 'aimd', backoffRatio: 0.5, tolerance: 3 })
        .maxQueue,
    ).toBe(Number.POSITIVE_INFINITY)
  })
})
