import { adaptiveConcurrency, ManualClock, type Priority } from '@sluice/core'
import { memoryStore } from '@sluice/keyed'
import { bulkheadChannel, isPromiseLike } from '@sluice/keyed/store'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import { BulkheadEngine, type BulkheadOptions } from './bulkhead-engine'
import type { BulkheadInfo } from './decision'
import type { Outcome } from './engine'
import { RateLimitEngine } from './rate-limit-engine'
import { listen } from './testing'

interface FakeRequest {
  tenant?: string
  tier?: Priority
  gone?: AbortController
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
  signal: (req) => {
    req.gone ??= new AbortController()
    return req.gone.signal
  },
}

const setup = (options: BulkheadOptions<FakeRequest, FakeResponse> = {}) => {
  const clock = new ManualClock()
  const store = memoryStore({ clock })
  return {
    clock,
    store,
    engine: new BulkheadEngine({ options: { store, clock, ...options }, request, response }),
  }
}

type Engine = BulkheadEngine<FakeRequest, FakeResponse>

/** Admits a request that must be answered at once (no queueing, synchronous store). */
function enter(engine: Engine, req: FakeRequest = {}) {
  const res: FakeResponse = new Map()
  const outcome = engine.admit(req, res)
  if (isPromiseLike(outcome)) throw new Error('expected a synchronous outcome')
  return { outcome, headers: Object.fromEntries(res) }
}

const later = (engine: Engine, req: FakeRequest = {}) =>
  Promise.resolve(engine.admit(req, new Map()))

/** The work and the response of an admitted request both over (`gone`: its client left). */
function over(
  outcome: { workDone(failed: boolean): void; done(gone: boolean): void },
  gone: boolean,
) {
  outcome.workDone(false)
  outcome.done(gone)
}

/** One turn of the event loop: every promise callback queued so far has run. No time passes. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

afterEach(() => {
  vi.restoreAllMocks()
})

describe('BulkheadEngine', () => {
  it('holds a slot until both the work and the response are over, and frees it once', () => {
    const { store, engine } = setup({ max: 3 })
    const a = enter(engine).outcome
    const b = enter(engine).outcome
    const c = enter(engine).outcome
    expect([a.action, a.holds, b.action, b.holds]).toEqual(['pass', true, 'pass', true])
    expect(store.inFlight).toBe(3)
    const full = enter(engine).outcome
    expect(full).toMatchObject({ action: 'refuse', holds: false, status: 503 })
    full.done(false)
    expect(store.inFlight).toBe(3)
    // The client left while the handler still runs: the slot stays taken.
    a.done(true)
    expect(store.inFlight).toBe(3)
    a.workDone(false)
    expect(store.inFlight).toBe(2)
    a.workDone(false)
    a.done(false)
    expect(store.inFlight).toBe(2)
    // The handler returned while its response is still being sent.
    b.workDone(false)
    expect(store.inFlight).toBe(2)
    b.done(false)
    expect(store.inFlight).toBe(1)
    // A handler that failed frees its slot at once: the error handler answers.
    c.workDone(true)
    expect(store.inFlight).toBe(0)
    c.done(false)
    expect(store.inFlight).toBe(0)
  })

  it('an adaptive permit whose client left counts as aborted (no sample), once the work is over', () => {
    const released: (string | undefined)[] = []
    const limiter = {
      name: 'fake',
      limit: 2,
      inFlight: 0,
      tryEnter: () => ({
        release: (o?: { dropped?: boolean; aborted?: boolean }) =>
          void released.push(o?.aborted ? 'aborted' : o?.dropped ? 'dropped' : undefined),
      }),
      subscribe: () => () => {},
    }
    const engine = new BulkheadEngine({ options: { max: limiter as never }, request, response })
    const left = enter(engine).outcome
    left.done(true)
    expect(released).toEqual([])
    left.workDone(false)
    const finished = enter(engine).outcome
    finished.workDone(false)
    finished.done(false)
    expect(released).toEqual(['aborted', undefined])
  })

  it('gives the handler a signal that aborts when its client leaves', () => {
    const { engine } = setup({ max: 2 })
    const a = enter(engine).outcome
    const info = a.info as BulkheadInfo
    expect(info).toMatchObject({ key: 'global', policy: '2-concurrent', limit: 2, remaining: 1 })
    const { signal } = info
    expect(signal.aborted).toBe(false)
    a.done(true)
    expect([signal.aborted, (signal.reason as Error).name]).toEqual([true, 'AbortError'])
    a.workDone(false)
    // Asked for only after the client left, it is aborted from the start.
    const b = enter(engine).outcome
    b.done(true)
    expect((b.info as BulkheadInfo).signal.aborted).toBe(true)
    b.workDone(false)
    // A response that finished aborts nothing.
    const c = enter(engine).outcome
    c.workDone(false)
    c.done(false)
    expect((c.info as BulkheadInfo).signal.aborted).toBe(false)
    enter(engine)
    enter(engine)
    expect(enter(engine).outcome.info).toBeUndefined()
  })

  it('holdTimeout: a slot held too long is freed, its response destroyed, its signal aborted', async () => {
    const { clock, store, engine } = setup({ max: 2, holdTimeout: '10s' })
    const destroyed: string[] = []
    const slow = enter(engine).outcome
    slow.follow({ destroy: () => void destroyed.push('slow') })
    await clock.advanceAsync(4_000)
    const quick = enter(engine).outcome
    quick.follow({ destroy: () => void destroyed.push('quick') })
    quick.workDone(false)
    quick.done(false)
    expect(clock.pendingSleeps).toBe(1)
    await clock.advanceAsync(5_999)
    expect([store.inFlight, destroyed]).toEqual([1, []])
    await clock.advanceAsync(1)
    expect([store.inFlight, destroyed]).toEqual([0, ['slow']])
    const { signal } = slow.info as BulkheadInfo
    expect([signal.aborted, (signal.reason as Error).name]).toEqual([true, 'TimeoutError'])
    // What the destroyed response and its handler report later changes nothing.
    slow.done(true)
    slow.workDone(false)
    expect([store.inFlight, clock.pendingSleeps]).toEqual([0, 0])
  })

  it('holdTimeout: each slot gets its own deadline; freed slots leave no timer behind', async () => {
    const { clock, store, engine } = setup({ max: 3, holdTimeout: '10s' })
    const first = enter(engine).outcome
    await clock.advanceAsync(3_000)
    const second = enter(engine).outcome
    await clock.advanceAsync(3_000)
    const third = enter(engine).outcome
    first.workDone(false)
    first.done(false)
    await clock.advanceAsync(6_999)
    expect(store.inFlight).toBe(2)
    await clock.advanceAsync(1)
    expect(store.inFlight).toBe(1)
    expect((second.info as BulkheadInfo).signal.aborted).toBe(true)
    expect((third.info as BulkheadInfo).signal.aborted).toBe(false)
    third.workDone(false)
    third.done(false)
    expect([store.inFlight, clock.pendingSleeps]).toEqual([0, 0])
  })

  it('holdTimeout: the system clock arms one timer for many slots', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'performance'] })
    try {
      const engine = new BulkheadEngine({
        options: { max: 3, holdTimeout: '10s', store: memoryStore() },
        request,
        response,
      })
      const outcomes = [enter(engine).outcome, enter(engine).outcome]
      expect(vi.getTimerCount()).toBe(1)
      for (const outcome of outcomes) {
        outcome.workDone(false)
        outcome.done(false)
      }
      vi.advanceTimersByTime(4_000)
      enter(engine)
      expect(vi.getTimerCount()).toBe(1)
      vi.advanceTimersByTime(6_000)
      // The first deadline passed with nothing due: one timer again, for the slot held.
      expect(vi.getTimerCount()).toBe(1)
      expect(engine.store.get('global', engine.policies)).toMatchObject([{ remaining: 2 }])
      vi.advanceTimersByTime(4_000)
      expect(engine.store.get('global', engine.policies)).toMatchObject([{ remaining: 3 }])
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })

  it('holdTimeout: expires slots on the next admission when the runtime dropped the timer', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'performance'] })
    try {
      const engine = new BulkheadEngine({
        options: { max: 2, holdTimeout: '10s', store: memoryStore() },
        request,
        response,
      })
      const destroyed: string[] = []
      enter(engine).outcome.follow({ destroy: () => void destroyed.push('first') })
      // workerd drops the timers of a request once it is over.
      vi.clearAllTimers()
      vi.advanceTimersByTime(10_000)
      expect(destroyed).toEqual([])
      enter(engine)
      expect(destroyed).toEqual(['first'])
      expect(engine.store.get('global', engine.policies)).toMatchObject([{ remaining: 1 }])
      expect(vi.getTimerCount()).toBe(1)
    } finally {
      vi.useRealTimers()
    }
  })

  it('holdTimeout: false holds a slot for as long as the request needs it', () => {
    const { clock, store, engine } = setup({ max: 1, holdTimeout: false })
    enter(engine)
    expect(clock.pendingSleeps).toBe(0)
    clock.advance(86_400_000)
    expect(store.inFlight).toBe(1)
  })

  it("answers with RateLimit headers named '<max>-concurrent' and Retry-After on a refusal", () => {
    const { engine } = setup({ max: 2 })
    expect(enter(engine).headers).toEqual({
      'RateLimit-Policy': '"2-concurrent";q=2;qu="concurrent-requests"',
      RateLimit: '"2-concurrent";r=1',
    })
    enter(engine)
    const refused = enter(engine)
    expect(refused.headers).toEqual({
      'RateLimit-Policy': '"2-concurrent";q=2;qu="concurrent-requests"',
      RateLimit: '"2-concurrent";r=0',
      'Retry-After': '1',
    })
    expect(refused.outcome.decision).toMatchObject({
      allowed: false,
      limit: 2,
      remaining: 0,
      policy: '2-concurrent',
      key: 'global',
    })
    expect(refused.outcome.refusal()).toEqual({
      contentType: 'text/plain; charset=utf-8',
      body: 'Service Unavailable',
    })
  })

  it('takes its name, Retry-After, status and header mode from the options', () => {
    const { engine } = setup({
      max: 1,
      name: 'workers',
      retryAfter: '5s',
      statusCode: 429,
      headers: 'draft-6',
    })
    enter(engine)
    const refused = enter(engine)
    expect(refused.outcome.status).toBe(429)
    expect(refused.headers).toEqual({
      'RateLimit-Policy': '1',
      'RateLimit-Limit': '1',
      'RateLimit-Remaining': '0',
      'Retry-After': '5',
    })
    expect(refused.outcome.decision?.policy).toBe('workers')
  })

  it('problemDetails: RFC 9457 temporary-reduced-capacity, without violated policies', () => {
    const { engine } = setup({ max: 1, problemDetails: true })
    enter(engine)
    const refusal = enter(engine).outcome.refusal() as { contentType: string; body: string }
    expect(refusal.contentType).toBe('application/problem+json')
    expect(JSON.parse(refusal.body)).toEqual({
      type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
      title: 'Request cannot be satisfied due to temporarily reduced capacity',
      status: 503,
      detail: 'Service Unavailable',
    })
  })

  it('keeps one bulkhead per key', () => {
    const { engine } = setup({ max: 1, key: (req) => req.tenant })
    expect(enter(engine, { tenant: 'a' }).outcome.action).toBe('pass')
    expect(enter(engine, { tenant: 'b' }).outcome.action).toBe('pass')
    expect(enter(engine, { tenant: 'a' }).outcome).toMatchObject({
      action: 'refuse',
      decision: { key: 'a' },
    })
  })

  it('hands a freed slot to the queue in FIFO order', async () => {
    const { store, engine } = setup({ max: 1, maxQueue: 2 })
    const holder = enter(engine).outcome
    const order: string[] = []
    const entered = (name: string) =>
      later(engine).then((outcome) => {
        order.push(name)
        return outcome
      })
    const second = entered('second')
    const third = entered('third')
    expect(engine.queued()).toBe(2)
    expect((await later(engine)).action).toBe('refuse')
    holder.workDone(false)
    holder.done(false)
    const secondIn = await second
    expect(secondIn).toMatchObject({ action: 'pass', holds: true })
    expect(engine.queued()).toBe(1)
    secondIn.workDone(false)
    secondIn.done(false)
    expect((await third).action).toBe('pass')
    expect(order).toEqual(['second', 'third'])
    expect(store.inFlight).toBe(1)
    expect(engine.queued()).toBe(0)
  })

  it('gives up after queueTimeout, on its clock', async () => {
    const { clock, engine } = setup({ max: 1, maxQueue: 1, queueTimeout: '2s' })
    const holder = enter(engine).outcome
    const waiting = later(engine)
    await clock.advanceAsync(1_999)
    expect(engine.queued()).toBe(1)
    await clock.advanceAsync(1)
    expect(await waiting).toMatchObject({ action: 'refuse', holds: false })
    expect(engine.queued()).toBe(0)
    expect(clock.pendingSleeps).toBe(1)
    holder.workDone(false)
    holder.done(false)
    expect(clock.pendingSleeps).toBe(0)
  })

  it('drops a queued request whose client leaves, without taking a slot', async () => {
    const { store, engine } = setup({ max: 1, maxQueue: 1 })
    const holder = enter(engine).outcome
    const quitter: FakeRequest = {}
    const waiting = later(engine, quitter)
    const reason = new Error('gone')
    quitter.gone?.abort(reason)
    await expect(waiting).rejects.toBe(reason)
    expect(engine.queued()).toBe(0)
    holder.workDone(false)
    holder.done(false)
    expect(store.inFlight).toBe(0)
  })

  it('hands the slot straight back when the client leaves while the store answers', async () => {
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const take = store.take.bind(store)
    let asked = 0
    let answer: Promise<void> = Promise.resolve()
    store.take = ((...args: Parameters<typeof take>) => {
      asked++
      return answer.then(() => take(...args))
    }) as unknown as typeof store.take
    const engine = new BulkheadEngine<FakeRequest, FakeResponse>({
      options: { max: 1, maxQueue: 1, store, clock },
      request,
      response,
    })
    const holder = await later(engine)
    const quitter: FakeRequest = {}
    const waiting = later(engine, quitter)
    await turn()
    expect(engine.queued()).toBe(1)
    let open = () => {}
    answer = new Promise((resolve) => {
      open = resolve
    })
    holder.workDone(false)
    holder.done(false)
    // The waiter woke and asked the store; its client leaves before the store answers.
    await turn()
    expect(asked).toBe(3)
    const reason = new Error('gone')
    quitter.gone?.abort(reason)
    open()
    await expect(waiting).rejects.toBe(reason)
    expect([store.inFlight, engine.queued()]).toEqual([0, 0])
  })

  it('on a second pass over one request reuses the decision and holds nothing more', async () => {
    vi.resetModules()
    const fresh = await import('./bulkhead-engine')
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const clock = new ManualClock()
    const store = memoryStore({ clock })
    const engine = new fresh.BulkheadEngine<FakeRequest, FakeResponse>({
      options: { max: 2, store, clock },
      request,
      response,
    })
    const req: FakeRequest = {}
    const first = engine.admit(req, new Map()) as Outcome
    const second = engine.admit(req, new Map()) as Outcome
    expect(second).toMatchObject({ action: 'pass', holds: false })
    expect(second.decision).toBe(first.decision)
    expect(store.inFlight).toBe(1)
    second.workDone(false)
    second.done(false)
    expect(store.inFlight).toBe(1)
    first.workDone(false)
    first.done(false)
    expect(store.inFlight).toBe(0)
    expect(spy.mock.calls.map(([, options]) => (options as { code?: string }).code)).toEqual([
      'ERR_SLUICE_DOUBLE_COUNT',
    ])
  })
})

describe('BulkheadEngine events', () => {
  it('publishes nothing while nobody listens', () => {
    expect(bulkheadChannel.hasSubscribers).toBe(false)
    const publish = vi.spyOn(bulkheadChannel, 'publish')
    const { engine } = setup({ max: 1 })
    const entered = enter(engine).outcome
    entered.workDone(false)
    entered.done(false)
    enter(engine)
    enter(engine)
    expect(publish).not.toHaveBeenCalled()
  })

  it('publishes on sluice:bulkhead in order, counts as after each event', async () => {
    const seen = listen<Record<string, unknown>>('sluice:bulkhead')
    try {
      const { clock, engine } = setup({ max: 1, maxQueue: 1, queueTimeout: '1s', name: 'pool' })
      const a = enter(engine).outcome
      const b = later(engine)
      expect((await later(engine)).action).toBe('refuse')
      clock.advance(250)
      a.workDone(false)
      a.done(false)
      const bIn = await b
      const c = later(engine)
      await clock.advanceAsync(1_000)
      await c
      clock.advance(500)
      bIn.workDone(false)
      bIn.done(false)
      const event = (name: string, inFlight: number, queued: number, extra = {}) => ({
        key: 'global',
        policy: 'pool',
        event: name,
        inFlight,
        queued,
        ...extra,
      })
      expect(seen.events).toEqual([
        event('enter', 1, 0),
        event('queue', 1, 1),
        event('reject', 1, 1),
        event('release', 0, 1, { heldMs: 250 }),
        event('enter', 1, 0, { waitedMs: 250 }),
        event('queue', 1, 1),
        event('timeout', 1, 0, { waitedMs: 1_000 }),
        event('reject', 1, 0),
        event('release', 0, 0, { heldMs: 1_500 }),
      ])
    } finally {
      seen.stop()
    }
  })
})

describe('BulkheadEngine with priorities', () => {
  const byTier = { priority: (req: FakeRequest) => req.tier ?? 'default' }

  it('refuses the lowest first: a critical request waits for the slot sheddable work frees', async () => {
    const { store, engine } = setup({ max: 2, ...byTier })
    const held = [enter(engine, { tier: 'sheddable' }), enter(engine, { tier: 'sheddable' })]
    expect(held.map((h) => h.outcome.action)).toEqual(['pass', 'pass'])
    // Even without a queue (maxQueue 0) a critical request is owed the next slot...
    const critical = later(engine, { tier: 'critical' })
    // ...and a sheddable newcomer is refused at once, naming its partition.
    const refused = enter(engine, { tier: 'sheddable' })
    expect(refused.outcome).toMatchObject({
      action: 'refuse',
      status: 503,
      decision: { allowed: false, partition: 'sheddable', policy: '2-concurrent' },
    })
    expect(refused.headers).toEqual({
      'RateLimit-Policy': '"2-concurrent/sheddable";q=2;qu="concurrent-requests"',
      RateLimit: '"2-concurrent/sheddable";r=0',
      'Retry-After': '1',
    })
    expect(engine.queued()).toBe(1)
    over(held[0]!.outcome, false)
    const admitted = await critical
    expect(admitted).toMatchObject({ action: 'pass', decision: { partition: 'critical' } })
    expect([store.inFlight, engine.queued()]).toEqual([2, 0])
    // Admitted requests keep the plain policy name in their headers.
    over(admitted, false)
    expect(enter(engine, { tier: 'critical' }).headers.RateLimit).toBe('"2-concurrent";r=0')
  })

  it('names the refusing partition in the problem details', () => {
    const { engine } = setup({ max: 1, problemDetails: true, ...byTier })
    enter(engine, { tier: 7 })
    const refusal = enter(engine, { tier: 3 }).outcome.refusal() as { body: string }
    expect(JSON.parse(refusal.body)).toEqual({
      type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
      title: 'Request cannot be satisfied due to temporarily reduced capacity',
      status: 503,
      partition: '3',
      detail: 'Service Unavailable',
    })
  })

  it("keeps a partition's share: lent while unused, the next released slot goes back to it", async () => {
    const { store, engine } = setup({
      max: 4,
      maxQueue: 10,
      partitions: { default: 0.5 },
      ...byTier,
    })
    const critical = [0, 1, 2, 3].map(() => enter(engine, { tier: 'critical' }).outcome)
    const order: string[] = []
    const queue = (tier: Priority, label: string) =>
      later(engine, { tier }).then((outcome) => {
        order.push(label)
        return outcome
      })
    const waiting = [queue('critical', 'c'), queue('default', 'd1'), queue('default', 'd2')]
    await turn()
    for (const outcome of critical) {
      over(outcome, false)
      await turn()
    }
    await Promise.all(waiting)
    // default is owed 2 of 4: its two waiters go before the critical one.
    expect(order).toEqual(['d1', 'd2', 'c'])
    expect(store.inFlight).toBe(3)
  })

  it('publishes the partition on every event of a request', async () => {
    const seen = listen<Record<string, unknown>>('sluice:bulkhead')
    try {
      const { clock, engine } = setup({ max: 2, queueTimeout: '1s', ...byTier })
      const a1 = enter(engine, { tier: 'sheddable' }).outcome
      const a2 = enter(engine, { tier: 'sheddable' }).outcome
      const b = later(engine, { tier: 'critical' })
      enter(engine, { tier: 'sheddable' })
      clock.advance(250)
      over(a1, false)
      const bIn = await b
      const c = later(engine, { tier: 'critical' })
      await clock.advanceAsync(1_000)
      expect((await c).action).toBe('refuse')
      over(a2, false)
      over(bIn, false)
      const event = (
        name: string,
        partition: string,
        inFlight: number,
        queued: number,
        extra = {},
      ) => ({
        key: 'global',
        policy: '2-concurrent',
        event: name,
        inFlight,
        queued,
        partition,
        ...extra,
      })
      expect(seen.events).toEqual([
        event('enter', 'sheddable', 1, 0),
        event('enter', 'sheddable', 2, 0),
        event('queue', 'critical', 2, 1),
        event('reject', 'sheddable', 2, 1),
        event('release', 'sheddable', 1, 1, { heldMs: 250 }),
        event('enter', 'critical', 2, 0, { waitedMs: 250 }),
        event('queue', 'critical', 2, 1),
        event('timeout', 'critical', 2, 0, { waitedMs: 1_000 }),
        event('reject', 'critical', 2, 0),
        event('release', 'sheddable', 1, 0, { heldMs: 1_250 }),
        event('release', 'critical', 0, 0, { heldMs: 1_000 }),
      ])
    } finally {
      seen.stop()
    }
  })

  it('a client that leaves while queued takes nothing, and idle keys are forgotten', async () => {
    const { store, engine } = setup({ max: 1, key: (req) => req.tenant, ...byTier })
    const holder = enter(engine, { tenant: 'a', tier: 'sheddable' }).outcome
    const quitter: FakeRequest = { tenant: 'a', tier: 'critical' }
    const waiting = later(engine, quitter)
    expect(engine.queued('a')).toBe(1)
    const reason = new Error('gone')
    quitter.gone?.abort(reason)
    await expect(waiting).rejects.toBe(reason)
    expect(engine.queued('a')).toBe(0)
    expect(enter(engine, { tenant: 'b', tier: 'sheddable' }).outcome.action).toBe('pass')
    over(holder, true)
    expect(store.inFlight).toBe(1)
    expect(enter(engine, { tenant: 'a' }).outcome.action).toBe('pass')
  })

  it('an async priority, and a bad one failing the request with a clear error', async () => {
    const { engine } = setup({
      max: 1,
      priority: async (req: FakeRequest) => req.tier ?? 'default',
    })
    expect((await later(engine, { tier: 'critical' })).action).toBe('pass')
    await expect(later(engine, { tier: 'urgent' as never })).rejects.toThrow(
      new TypeError(
        `bulkhead: "priority" must be 'critical', 'default', 'sheddable' or a finite number, got "urgent"`,
      ),
    )
  })

  it("queuePolicy 'codel' sheds a standing queue, with or without priorities", async () => {
    const { clock, engine } = setup({ max: 1, maxQueue: 10, queuePolicy: 'codel' })
    const held = enter(engine).outcome
    const [w1, w2, w3] = [later(engine), later(engine), later(engine)]
    // [0, 100) let one request in without waiting: healthy. w1 gets the slot at 100.
    await clock.advanceAsync(100)
    over(held, false)
    const first = await w1
    expect(first.action).toBe('pass')
    // [100, 200) let in only w1, who had waited 100 ms: overloaded. w2 and w3, waiting
    // 200 ms (past twice the 5 ms target), are dropped; a newcomer finds the slot free.
    await clock.advanceAsync(100)
    over(first, false)
    expect([(await w2).action, (await w3).action]).toEqual(['refuse', 'refuse'])
    expect(enter(engine).outcome.action).toBe('pass')
  })

  it('with an adaptive max: priorities over the live limit', async () => {
    const clock = new ManualClock()
    const limiter = adaptiveConcurrency({ clock, probeSamples: 3, random: () => 0.5 })
    const engine = new BulkheadEngine<FakeRequest, FakeResponse>({
      options: { max: limiter, clock, ...byTier },
      request,
      response,
    })
    const probe = [0, 1, 2].map(() => enter(engine, { tier: 'sheddable' }).outcome)
    const critical = later(engine, { tier: 'critical' })
    expect(enter(engine, { tier: 'sheddable' }).outcome.decision).toMatchObject({
      allowed: false,
      partition: 'sheddable',
      limit: 3,
    })
    clock.advance(10)
    over(probe[0]!, false)
    expect(await critical).toMatchObject({ action: 'pass', decision: { partition: 'critical' } })
    expect(limiter.inFlight).toBe(3)
  })
})

describe('BulkheadEngine with an adaptive max', () => {
  it('a client that hangs up is no latency sample: the probe measures the others', async () => {
    const clock = new ManualClock()
    const limiter = adaptiveConcurrency({ clock, probeSamples: 4, random: () => 0.5 })
    const engine = new BulkheadEngine<FakeRequest, FakeResponse>({
      options: { max: limiter, clock },
      request,
      response,
    })
    for (let round = 0; round < 2; round++) {
      const [gone, a, b] = [0, 1, 2].map(() => enter(engine).outcome)
      clock.advance(1)
      over(gone!, true)
      clock.advance(9)
      over(a!, false)
      over(b!, false)
    }
    expect([limiter.probing, limiter.noLoadRtt]).toEqual([false, 10])
  })
})

describe('BulkheadEngine construction', () => {
  it.each<[Record<string, unknown>, Error]>([
    [
      { limit: 5 },
      new TypeError(
        'bulkhead: unknown option "limit" (use "max": a bulkhead counts requests in flight, not per window)',
      ),
    ],
    [{ timeout: '1s' }, new TypeError('bulkhead: unknown option "timeout" (use "queueTimeout")')],
    [{ max: 0 }, new RangeError('bulkhead: "max" must be a positive integer, got 0')],
    [
      { maxQueue: -1 },
      new RangeError('bulkhead: "maxQueue" must be a non-negative integer, got -1'),
    ],
    [
      { retryAfter: 0 },
      new RangeError('bulkhead: "retryAfter" must be a positive duration, got 0'),
    ],
    [{ name: '' }, new TypeError('bulkhead: "name" must be a non-empty string, got ""')],
    [
      { partitions: { critical: 0.5 } },
      new TypeError(
        'bulkhead: "partitions" needs "priority", the function that gives each request\'s priority',
      ),
    ],
    [
      { priority: 'critical' },
      new TypeError('bulkhead: "priority" must be a function, got "critical"'),
    ],
    [
      { priority: () => 1, partitions: { critical: 0.6, sheddable: 0.6 } },
      new RangeError(
        'bulkhead: "partitions" shares must sum to at most 1, got 1.2 (critical 0.6 + sheddable 0.6)',
      ),
    ],
    [
      { queuePolicy: 'lifo' },
      new TypeError(
        `bulkhead: "queuePolicy" must be one of 'fifo', 'codel', 'adaptive-lifo', got "lifo"`,
      ),
    ],
    [
      { queueTarget: '5ms' },
      new TypeError(
        `bulkhead: "queueTarget" applies to queuePolicy 'codel' or 'adaptive-lifo', not 'fifo'`,
      ),
    ],
  ])('refuses %j, naming the option', (options, error) => {
    let thrown: unknown
    try {
      new BulkheadEngine({ options: options as never, request, response })
    } catch (e) {
      thrown = e
    }
    expect(thrown).toBeInstanceOf(error.constructor)
    expect(thrown).toEqual(error)
  })

  it('refuses a name a rate limit already uses on the same store', () => {
    const store = memoryStore()
    new RateLimitEngine({ options: { name: 'api', limit: 10, store }, request, response })
    expect(
      () => new BulkheadEngine({ options: { name: 'api', max: 10, store }, request, response }),
    ).toThrow(
      new TypeError(
        'bulkhead: policy "api" (concurrency 10) shares its name with policy "api" (sliding-window 10 per 1m) of an earlier rateLimit on the same store, of another algorithm; give one of them another name (a spec of the same algorithm would carry the state over)',
      ),
    )
    expect(
      () => new BulkheadEngine({ options: { max: 10, store }, request, response }),
    ).not.toThrow()
    expect(
      () => new BulkheadEngine({ options: { max: 10, store }, request, response }),
    ).not.toThrow()
  })
})
