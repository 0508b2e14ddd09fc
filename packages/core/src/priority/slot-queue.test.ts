import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { flush, type Tracked, track } from '../../test/helpers'
import { ManualClock } from '../clock'
import { concurrency } from '../concurrency/concurrency'
import type { ConcurrencyOptions, Permit, Priority } from '../types'

function setup(options: Omit<ConcurrencyOptions, 'clock'>) {
  const clock = new ManualClock()
  const limiter = concurrency({ clock, ...options })
  return { clock, limiter }
}

/** Which of `waiters` have been granted, by label, in the order given. */
function granted(waiters: Record<string, Tracked<Permit>>): string[] {
  return Object.entries(waiters)
    .filter(([, w]) => w.status === 'resolved')
    .map(([label]) => label)
}

describe('priorities: who is refused first', () => {
  it('serves waiters by priority, first come first served within one', async () => {
    const { limiter } = setup({ max: 1, maxQueue: 10 })
    const holder = limiter.tryEnter({ priority: 'critical' })!
    const enter = (priority: Priority) => track(limiter.enter({ priority }))
    const waiters = {
      s1: enter('sheddable'),
      d1: enter('default'),
      s2: enter(0),
      d2: enter(1),
      c1: enter('critical'),
      n5: enter(5),
    }
    const order: string[] = []
    let permit = holder
    for (let i = 0; i < 6; i++) {
      permit.release()
      await flush()
      const next = granted(waiters).find((label) => !order.includes(label))!
      order.push(next)
      permit = waiters[next as keyof typeof waiters].value!
    }
    expect(order).toEqual(['n5', 'c1', 'd1', 'd2', 's1', 's2'])
  })

  it('in a full queue a newcomer takes the place of the lowest waiter that would go last', async () => {
    const { limiter } = setup({ max: 1, maxQueue: 2 })
    limiter.tryEnter({ priority: 'critical' })
    const a = track(limiter.enter({ priority: 'sheddable' }))
    const b = track(limiter.enter({ priority: 'sheddable' }))
    const c = track(limiter.enter({ priority: 'critical' }))
    await flush()
    // b, the newer sheddable, would have been served last: it makes room.
    expect([a.status, b.status, c.status]).toEqual(['pending', 'rejected', 'pending'])
    expect(b.reason).toMatchObject({
      code: 'ERR_SLUICE_QUEUE_FULL',
      partition: 'sheddable',
      message:
        'concurrency: the wait queue is full and a request of higher priority took this place (partition "sheddable")',
    })
    const d = track(limiter.enter({ priority: 'default' }))
    await flush()
    expect([a.status, d.status]).toEqual(['rejected', 'pending'])
    // Nobody below sheddable waits: a sheddable newcomer is the one refused.
    await expect(limiter.enter({ priority: 'sheddable' })).rejects.toMatchObject({
      code: 'ERR_SLUICE_QUEUE_FULL',
      partition: 'sheddable',
      message:
        'concurrency: 1 in flight and the wait queue is full (maxQueue 2) (partition "sheddable")',
    })
    // An equal priority does not displace an earlier waiter either.
    await expect(limiter.enter({ priority: 'default' })).rejects.toMatchObject({
      code: 'ERR_SLUICE_QUEUE_FULL',
      partition: 'default',
    })
    expect(limiter.queued).toBe(2)
  })

  it('without a queue, a request waits for the slot of lower-priority work as it finishes', async () => {
    const { limiter } = setup({ max: 2 })
    const held = [limiter.tryEnter({ priority: 'sheddable' })!, limiter.tryEnter({ priority: 0 })!]
    // Two sheddable in flight will make room for two more important requests, no more.
    const c1 = track(limiter.enter({ priority: 'critical' }))
    const c2 = track(limiter.enter({ priority: 'critical' }))
    const d = track(limiter.enter({ priority: 'default' }))
    const s = track(limiter.enter({ priority: 'sheddable' }))
    await flush()
    expect([c1.status, c2.status, d.status, s.status]).toEqual([
      'pending',
      'pending',
      'rejected',
      'rejected',
    ])
    expect(d.reason).toMatchObject({ code: 'ERR_SLUICE_QUEUE_FULL', partition: 'default' })
    expect(limiter.queued).toBe(2)
    held[0]!.release()
    await flush()
    expect([c1.status, c2.status]).toEqual(['resolved', 'pending'])
    held[1]!.release()
    await flush()
    expect(c2.status).toBe('resolved')
    expect(limiter.inFlight).toBe(2)
  })

  it('a newcomer takes a free permit past lower waiters only, never past its equals', async () => {
    const { limiter } = setup({ max: 3, maxQueue: 5 })
    limiter.tryAcquire(2)
    // A sheddable waiter for 2 permits holds the queue: 1 is free, 2 are not.
    const big = track(limiter.enter({ permits: 2, priority: 'sheddable' }))
    await flush()
    expect(limiter.tryEnter({ priority: 'sheddable' })).toBeUndefined()
    expect(limiter.tryEnter({ priority: 'critical' })?.permits).toBe(1)
    expect([limiter.inFlight, big.status]).toEqual([3, 'pending'])
  })

  it('tryEnter(permits) and tryEnter({ permits, priority }) both count', () => {
    const { limiter } = setup({ max: 5 })
    expect(limiter.tryEnter(2)?.permits).toBe(2)
    expect(limiter.tryEnter({ permits: 3, priority: 'critical' })?.permits).toBe(3)
    expect(limiter.inFlight).toBe(5)
  })
})

describe('partitions: guaranteed shares, lent and taken back', () => {
  it('lends an unused share, and the next released permit goes back to its owner', async () => {
    const { limiter } = setup({ max: 4, partitions: { critical: 0.5 } })
    // Critical is quiet: sheddable may use all 4, critical's 2 included.
    const sheddable = [0, 1, 2, 3].map(() => limiter.tryEnter({ priority: 'sheddable' })!)
    expect(sheddable.every((p) => p !== undefined)).toBe(true)
    // Running work is never preempted: a critical tryEnter finds no room.
    expect(limiter.tryEnter({ priority: 'critical' })).toBeUndefined()
    // Its owner may wait for its share even with maxQueue 0.
    const c1 = track(limiter.enter({ priority: 'critical' }))
    const c2 = track(limiter.enter({ priority: 'critical' }))
    await flush()
    expect(limiter.queued).toBe(2)
    // No sheddable newcomer takes a released permit while the owner waits.
    sheddable[0]!.release()
    expect(limiter.tryEnter({ priority: 'sheddable' })).toBeUndefined()
    await flush()
    expect([c1.status, c2.status]).toEqual(['resolved', 'pending'])
    sheddable[1]!.release()
    await flush()
    expect(c2.status).toBe('resolved')
    // Back at its share, critical lends again once it leaves: sheddable may borrow.
    c1.value!.release()
    expect(limiter.tryEnter({ priority: 'sheddable' })).toBeDefined()
  })

  it("a share is never taken by another, not even by a higher priority's waiters", async () => {
    const { limiter } = setup({ max: 4, maxQueue: 5, partitions: { sheddable: 0.5 } })
    const critical = [0, 1, 2, 3].map(() => limiter.tryEnter({ priority: 'critical' })!)
    const c = track(limiter.enter({ priority: 'critical' }))
    const s1 = track(limiter.enter({ priority: 'sheddable' }))
    const s2 = track(limiter.enter({ priority: 'sheddable' }))
    const s3 = track(limiter.enter({ priority: 'sheddable' }))
    await flush()
    const order: string[] = []
    const waiters = { c, s1, s2, s3 }
    for (const permit of critical) {
      permit.release()
      await flush()
      order.push(granted(waiters).find((label) => !order.includes(label))!)
    }
    // Sheddable is owed 2 (half of 4): those go first; then critical outranks the third.
    expect(order).toEqual(['s1', 's2', 'c', 's3'])
  })

  it('a waiter owed its share goes before a higher priority that is over its own', async () => {
    const { limiter } = setup({ max: 2, maxQueue: 2, partitions: { default: 0.5 } })
    const held = [limiter.tryEnter({ priority: 'critical' })!, limiter.tryEnter({ priority: 5 })!]
    const critical = track(limiter.enter({ priority: 'critical' }))
    const owner = track(limiter.enter())
    held[0]!.release()
    await flush()
    expect([owner.status, critical.status]).toEqual(['resolved', 'pending'])
    expect(limiter.inFlight).toBe(2)
  })

  it('a share is floor(share × max) permits', async () => {
    const { limiter } = setup({ max: 3, partitions: { sheddable: 0.5 } })
    for (let i = 0; i < 3; i++) limiter.tryEnter({ priority: 'critical' })
    // floor(0.5 × 3) = 1: one sheddable request is owed a permit and waits; a second is not,
    // and with no queue and nothing below it in flight, it is refused.
    const s1 = track(limiter.enter({ priority: 'sheddable' }))
    const s2 = track(limiter.enter({ priority: 'sheddable' }))
    await flush()
    expect([s1.status, s2.status]).toEqual(['pending', 'rejected'])
    expect(s2.reason).toMatchObject({
      code: 'ERR_SLUICE_QUEUE_FULL',
      partition: 'sheddable',
      message:
        'concurrency: 3 in flight and the wait queue is full (maxQueue 0) (partition "sheddable")',
    })
  })
})

describe("queuePolicy 'codel' (target 5 ms, interval 100 ms)", () => {
  it('drops waiters past twice the target once overloaded, refuses newcomers that would wait past it, and recovers', async () => {
    const { clock, limiter } = setup({ max: 1, maxQueue: 10, queuePolicy: 'codel' })
    const holder = limiter.tryEnter()!
    const [a, b, c] = [0, 1, 2].map(() => track(limiter.enter()))
    await flush()
    // [0, 100): one request let in without waiting. At 100 the interval is judged healthy.
    clock.set(100)
    holder.release()
    await flush()
    expect([a?.status, b?.status, c?.status]).toEqual(['resolved', 'pending', 'pending'])
    clock.set(150)
    a?.value?.release()
    await flush()
    // [100, 200): a waited 100 ms, b 150 ms: even the shortest wait was over 5 ms.
    clock.set(200)
    b?.value?.release()
    await flush()
    expect(c?.status).toBe('rejected')
    expect(c?.reason).toMatchObject({
      code: 'ERR_SLUICE_TIMEOUT',
      partition: 'default',
      message:
        'concurrency: dropped after waiting 200 ms, over twice the queue target of 5 ms (partition "default")',
    })
    // A free permit is still taken at once; a newcomer that must wait is refused at once:
    // 2 permits were released over [100, 200), so one permit ahead is 50 ms away.
    const d = limiter.tryEnter()!
    await expect(limiter.enter()).rejects.toMatchObject({
      code: 'ERR_SLUICE_TIMEOUT',
      message:
        'concurrency: 1 permit(s) would wait about 50 ms, over the queue target of 5 ms (partition "default")',
    })
    expect(limiter.queued).toBe(0)
    // [200, 300) let d in without waiting: healthy again, so newcomers may queue.
    clock.set(300)
    d.release()
    limiter.tryEnter()
    const g = track(limiter.enter())
    await flush()
    expect([g.status, limiter.queued]).toEqual(['pending', 1])
  })

  it('judges each priority by its own waiters: critical getting through hides no standing sheddable queue', async () => {
    const { clock, limiter } = setup({ max: 1, maxQueue: 10, queuePolicy: 'codel' })
    let held = limiter.tryEnter({ priority: 'critical' })!
    const s = track(limiter.enter({ priority: 'sheddable' }))
    // Every 10 ms a critical request arrives and takes the next permit ahead of s.
    for (let t = 10; t <= 200; t += 10) {
      const next = track(limiter.enter({ priority: 'critical' }))
      clock.set(t)
      held.release()
      await flush()
      if (s.status !== 'pending') break
      held = next.value!
    }
    // [0, 100) had no sheddable let in and s waiting since 0: by 100 sheddable is
    // overloaded, and s, past 10 ms, is dropped at the first look after that.
    expect(clock.now()).toBe(100)
    expect(s.reason).toMatchObject({ code: 'ERR_SLUICE_TIMEOUT', partition: 'sheddable' })
  })
})

describe("queuePolicy 'adaptive-lifo'", () => {
  it('serves the oldest first until overloaded, then the newest, dropping the oldest', async () => {
    const { clock, limiter } = setup({ max: 1, maxQueue: 10, queuePolicy: 'adaptive-lifo' })
    const holder = limiter.tryEnter()!
    const a = track(limiter.enter())
    const b = track(limiter.enter())
    clock.set(100)
    holder.release()
    await flush()
    // Not overloaded: first come, first served.
    expect([a.status, b.status]).toEqual(['resolved', 'pending'])
    clock.set(195)
    const c = track(limiter.enter())
    clock.set(197)
    const d = track(limiter.enter())
    clock.set(199)
    const e = track(limiter.enter())
    // [100, 200): a waited 100 ms. Overloaded: b (200 ms) is dropped, the newest goes first.
    clock.set(200)
    a.value!.release()
    await flush()
    expect([b.status, c.status, d.status, e.status]).toEqual([
      'rejected',
      'pending',
      'pending',
      'resolved',
    ])
    clock.set(204)
    e.value!.release()
    await flush()
    expect([c.status, d.status]).toEqual(['pending', 'resolved'])
    // c has waited 12 ms, past twice the target: dropped rather than served late.
    clock.set(207)
    d.value!.release()
    await flush()
    expect(c.status).toBe('rejected')
    expect(limiter.queued).toBe(0)
  })

  it('in a full overloaded queue the oldest of the lowest priority makes room', async () => {
    const { clock, limiter } = setup({ max: 1, maxQueue: 2, queuePolicy: 'adaptive-lifo' })
    const holder = limiter.tryEnter({ priority: 'critical' })!
    const x = track(limiter.enter({ priority: 'sheddable' }))
    clock.set(8)
    holder.release()
    await flush()
    clock.set(50)
    x.value!.release()
    const busy = limiter.tryEnter({ priority: 'critical' })!
    clock.set(96)
    const y = track(limiter.enter({ priority: 'sheddable' }))
    clock.set(98)
    const z = track(limiter.enter({ priority: 'sheddable' }))
    // [0, 100): the only sheddable request let in, x, waited 8 ms: overloaded at 100. The
    // queue is full (y, z): a critical newcomer takes the place of y, the oldest, who would
    // be served last now (a FIFO queue would have refused z).
    clock.set(100)
    const critical = track(limiter.enter({ priority: 'critical' }))
    await flush()
    expect([y.status, z.status, critical.status]).toEqual(['rejected', 'pending', 'pending'])
    expect(y.reason).toMatchObject({ code: 'ERR_SLUICE_QUEUE_FULL', partition: 'sheddable' })
    busy.release()
    await flush()
    expect([z.status, critical.status]).toEqual(['pending', 'resolved'])
    critical.value!.release()
    await flush()
    expect(z.status).toBe('resolved')
  })
})

describe('waiters with priorities', () => {
  it('a timeout or an abort takes a waiter out, and the ones behind it move up', async () => {
    const { clock, limiter } = setup({ max: 2, maxQueue: 5 })
    limiter.tryAcquire(2)
    const controller = new AbortController()
    const big = track(limiter.enter({ permits: 2, priority: 'critical', timeout: 50 }))
    const aborted = track(limiter.enter({ priority: 'critical', signal: controller.signal }))
    const small = track(limiter.enter({ priority: 'default' }))
    limiter.release()
    await flush()
    // One permit is free, but the critical request for two goes first.
    expect([big.status, small.status]).toEqual(['pending', 'pending'])
    controller.abort(new Error('gone'))
    await clock.advanceAsync(50)
    expect(big.reason).toMatchObject({
      code: 'ERR_SLUICE_TIMEOUT',
      partition: 'critical',
      message: 'concurrency: 2 permit(s) not available within 50 ms (partition "critical")',
    })
    expect((aborted.reason as Error).message).toBe('gone')
    expect([small.status, limiter.inFlight, limiter.queued, clock.pendingSleeps]).toEqual([
      'resolved',
      2,
      0,
      0,
    ])
  })

  it('a numbered priority leaves nothing behind once its requests are done', async () => {
    const { limiter } = setup({ max: 1, maxQueue: 1 })
    for (let priority = 10; priority < 1010; priority++) {
      limiter.tryEnter({ priority })!.release()
    }
    const holder = limiter.tryEnter({ priority: 7.5 })!
    const waiter = track(limiter.enter({ priority: 3 }))
    holder.release()
    await flush()
    waiter.value!.release()
    expect([limiter.inFlight, limiter.queued]).toEqual([0, 0])
  })
})

describe('invariants over random traffic', () => {
  const priorities = ['critical', 'default', 'sheddable', 7] as const
  const step = fc.oneof(
    fc.record({ op: fc.constant('try' as const), priority: fc.constantFrom(...priorities) }),
    fc.record({ op: fc.constant('wait' as const), priority: fc.constantFrom(...priorities) }),
    fc.record({ op: fc.constant('release' as const), index: fc.nat() }),
    fc.record({ op: fc.constant('abort' as const), index: fc.nat() }),
    fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 40 }) }),
  )
  const config = fc.record({
    max: fc.integer({ min: 1, max: 5 }),
    maxQueue: fc.integer({ min: 0, max: 3 }),
    partitions: fc.constantFrom({}, { critical: 0.5 }, { sheddable: 0.4, critical: 0.4 }),
    queuePolicy: fc.constantFrom('fifo' as const, 'codel' as const, 'adaptive-lifo' as const),
  })

  it('never exceeds max, never idles a permit while someone waits, and settles every waiter', async () => {
    await fc.assert(
      fc.asyncProperty(config, fc.array(step, { maxLength: 60 }), async (options, steps) => {
        const { clock, limiter } = setup(options)
        const held: Permit[] = []
        const waiting: { controller: AbortController; settled: boolean }[] = []
        const counted = () => waiting.filter((w) => !w.settled).length
        for (const s of steps) {
          if (s.op === 'try') {
            const permit = limiter.tryEnter({ priority: s.priority })
            if (permit !== undefined) held.push(permit)
          } else if (s.op === 'wait') {
            const entry = { controller: new AbortController(), settled: false }
            waiting.push(entry)
            limiter.enter({ priority: s.priority, signal: entry.controller.signal }).then(
              (permit) => {
                entry.settled = true
                held.push(permit)
              },
              () => {
                entry.settled = true
              },
            )
          } else if (s.op === 'release' && held.length > 0) {
            held.splice(s.index % held.length, 1)[0]!.release()
          } else if (s.op === 'abort' && waiting.length > 0) {
            waiting[s.index % waiting.length]!.controller.abort()
          } else if (s.op === 'advance') {
            clock.advance(s.ms)
          }
          await flush()
          expect(limiter.inFlight).toBe(held.length)
          expect(limiter.inFlight).toBeLessThanOrEqual(options.max)
          expect(limiter.queued).toBe(counted())
          // Work-conserving: a waiter is left waiting only when every permit is held.
          if (limiter.queued > 0) expect(limiter.inFlight).toBe(options.max)
        }
        for (const w of waiting) w.controller.abort()
        for (const permit of held.splice(0)) permit.release()
        await flush()
        expect([limiter.inFlight, limiter.queued, clock.pendingSleeps]).toEqual([0, 0, 0])
      }),
      { numRuns: 300 },
    )
  })
})
