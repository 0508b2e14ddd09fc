import { describe, expect, it } from 'vitest'
import { flush, track } from '../../test/helpers'
import { ManualClock } from '../clock'
import { concurrency } from '../concurrency/concurrency'
import { RateLimitError } from '../errors'
import { bulkheaded } from './bulkheaded'

/** A promise the test settles by hand. */
function deferred<T>() {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

describe('bulkheaded', () => {
  it('holds a permit for the whole of a synchronous call, released on return and on throw', () => {
    const bulkhead = concurrency({ max: 1, name: 'db' })

    class Repo {
      @bulkheaded(bulkhead)
      read(fail: boolean): number {
        if (fail) throw new Error('boom')
        return bulkhead.inFlight
      }
    }

    const repo = new Repo()
    expect(repo.read(false)).toBe(1)
    expect(bulkhead.inFlight).toBe(0)
    expect(() => repo.read(true)).toThrow('boom')
    expect(bulkhead.inFlight).toBe(0)
  })

  it('holds the permit until a returned promise settles, success or failure, exactly once', async () => {
    const bulkhead = concurrency({ max: 2, name: 'exports' })
    const jobs = [deferred<string>(), deferred<string>(), deferred<string>()]

    class Exporter {
      @bulkheaded(bulkhead)
      run(index: number): Promise<string> {
        return (jobs[index] as { promise: Promise<string> }).promise
      }
    }

    const exporter = new Exporter()
    const a = track(exporter.run(0))
    const b = track(exporter.run(1))
    expect(bulkhead.inFlight).toBe(2)
    let thrown: unknown
    try {
      void exporter.run(2)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(RateLimitError)
    expect(thrown).toMatchObject({ code: 'ERR_SLUICE_LIMITED', limiter: 'exports' })
    jobs[0]?.resolve('done')
    jobs[1]?.reject(new Error('failed'))
    await flush()
    expect([a.status, a.value, b.status]).toEqual(['resolved', 'done', 'rejected'])
    expect(bulkhead.inFlight).toBe(0)
    // Exactly once: a second release would have thrown on over-release, and the
    // permits are all back.
    expect(bulkhead.tryAcquire(2)).toBe(true)
  })

  it('with wait: queues FIFO up to the wait, and releases on rejection', async () => {
    const clock = new ManualClock()
    const bulkhead = concurrency({ max: 1, maxQueue: 5, clock })
    const gates = [deferred<void>(), deferred<void>(), deferred<void>()]
    const order: number[] = []

    class Worker {
      @bulkheaded(bulkhead, { wait: '1s' })
      async work(index: number): Promise<number> {
        order.push(index)
        await gates[index]?.promise
        if (index === 1) throw new Error('worker failed')
        return index
      }
    }

    const worker = new Worker()
    const first = track(worker.work(0))
    const second = track(worker.work(1))
    const third = track(worker.work(2))
    await flush()
    expect([order, bulkhead.queued]).toEqual([[0], 2])
    gates[0]?.resolve()
    await flush()
    expect([first.status, order]).toEqual(['resolved', [0, 1]])
    gates[1]?.resolve()
    await flush()
    expect([second.status, order]).toEqual(['rejected', [0, 1, 2]])
    await clock.advanceAsync(1000)
    // The third got its permit before its wait ran out; it is still running.
    expect([third.status, bulkhead.inFlight]).toEqual(['pending', 1])
    gates[2]?.resolve()
    await flush()
    expect([third.status, third.value, bulkhead.inFlight]).toEqual(['resolved', 2, 0])
  })

  it('with wait: a call that cannot get a permit in time rejects with ERR_SLUICE_TIMEOUT and never runs', async () => {
    const clock = new ManualClock()
    const bulkhead = concurrency({ max: 1, maxQueue: 5, clock })
    const held = bulkhead.tryEnter()
    let ran = false
    const guarded = bulkheaded(bulkhead, { wait: 500 })(async () => {
      ran = true
    })
    const call = track(guarded())
    await clock.advanceAsync(500)
    expect(call.status).toBe('rejected')
    expect(call.reason).toMatchObject({ code: 'ERR_SLUICE_TIMEOUT' })
    expect([ran, bulkhead.queued]).toEqual([false, 0])
    held?.release()
    expect(bulkhead.inFlight).toBe(0)
  })

  it('refuses anything but a concurrency limiter and a function or method', () => {
    const bulkhead = concurrency({ max: 1 })
    expect(() => bulkheaded({ tryEnter: 1 } as never)).toThrow(
      new TypeError('bulkheaded: "limiter" must be a concurrency limiter, got an object'),
    )
    expect(() =>
      bulkheaded(bulkhead)((() => 1) as never, { kind: 'field', name: 'x' } as never),
    ).toThrow(new TypeError('bulkheaded: can only decorate methods, not a field'))
    expect(() => bulkheaded(bulkhead, { wait: -1 })).toThrow(
      /^bulkheaded: "wait" must be a duration/,
    )
  })

  it('enters each call at its priority, and a refusal names the partition', async () => {
    const bulkhead = concurrency({ max: 1, maxQueue: 5, name: 'jobs' })
    const order: string[] = []
    const run = bulkheaded(bulkhead, {
      wait: '1s',
      priority: (tier: string) => (tier === 'paid' ? 'critical' : 'sheddable'),
    })(async (_tier: string, label: string) => {
      order.push(label)
      await flush()
    })
    const first = run('free', 'first')
    const calls = [run('free', 'free'), run('paid', 'paid')]
    await Promise.all([first, ...calls])
    expect(order).toEqual(['first', 'paid', 'free'])

    const background = bulkheaded(bulkhead, { priority: 'sheddable' })(() => 'done')
    const holder = bulkhead.tryEnter()!
    expect(() => background()).toThrow(
      new RateLimitError('ERR_SLUICE_LIMITED', {
        limiter: 'jobs',
        partition: 'sheddable',
        message: 'jobs: all 1 permits are in flight (partition "sheddable")',
      }),
    )
    holder.release()
    expect(background()).toBe('done')
    expect(() => bulkheaded(bulkhead, { priority: (() => 'top') as never })(() => 1)()).toThrow(
      /^bulkheaded: "priority" must be/,
    )
  })
})
