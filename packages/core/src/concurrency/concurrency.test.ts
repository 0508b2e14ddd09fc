import { getEventListeners, setMaxListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { flush, track } from '../../test/helpers'
import { ManualClock } from '../clock'
import { RateLimitError } from '../errors'
import type { Permit } from '../types'
import { concurrency } from './concurrency'

describe('concurrency', () => {
  it('reports its configuration', () => {
    expect(concurrency({ max: 4 })).toMatchObject({
      name: 'concurrency',
      max: 4,
      maxQueue: 0,
      inFlight: 0,
      queued: 0,
    })
    expect(concurrency({ max: 1, maxQueue: Number.POSITIVE_INFINITY }).maxQueue).toBe(
      Number.POSITIVE_INFINITY,
    )
  })

  it('counts permits in flight; time plays no part', () => {
    const clock = new ManualClock()
    const bulkhead = concurrency({ max: 3, clock })
    expect(bulkhead.tryAcquire(2)).toBe(true)
    expect(bulkhead.tryAcquire(2)).toBe(false)
    expect(bulkhead.tryAcquire()).toBe(true)
    expect([bulkhead.inFlight, bulkhead.availablePermits()]).toEqual([3, 0])
    clock.advance(86_400_000)
    expect(bulkhead.tryAcquire()).toBe(false)
    bulkhead.release(2)
    expect([bulkhead.inFlight, bulkhead.availablePermits()]).toEqual([1, 2])
    expect(bulkhead.tryAcquire(4)).toBe(false)
    expect(bulkhead.inFlight).toBe(1)
  })

  it('throws on over-release instead of silently raising the limit', () => {
    const bulkhead = concurrency({ max: 3 })
    bulkhead.tryAcquire()
    expect(() => bulkhead.release(2)).toThrow(
      new RangeError('concurrency.release: cannot release 2 permit(s), only 1 held'),
    )
    expect(bulkhead.inFlight).toBe(1)
    bulkhead.release()
    expect(() => bulkhead.release()).toThrow(RangeError)
  })

  it('tryEnter gives a Permit that `using` frees on scope exit, even on throw', () => {
    const bulkhead = concurrency({ max: 2 })
    {
      using permit = bulkhead.tryEnter(2)
      expect(permit?.permits).toBe(2)
      expect(bulkhead.inFlight).toBe(2)
      expect(bulkhead.tryEnter()).toBeUndefined()
    }
    expect(bulkhead.inFlight).toBe(0)
    expect(() => {
      using _permit = bulkhead.tryEnter()
      expect(bulkhead.inFlight).toBe(1)
      throw new Error('task failed')
    }).toThrow('task failed')
    expect(bulkhead.inFlight).toBe(0)
  })

  it('dispose after release is a no-op; a second explicit release throws', () => {
    const bulkhead = concurrency({ max: 2 })
    const permit = bulkhead.tryEnter() as Permit
    const other = bulkhead.tryEnter() as Permit
    permit.release()
    permit[Symbol.dispose]()
    expect(bulkhead.inFlight).toBe(1)
    expect(() => permit.release()).toThrow('concurrency: this permit (1) was already released')
    expect(bulkhead.inFlight).toBe(1)
    other[Symbol.dispose]()
    other[Symbol.dispose]()
    expect(bulkhead.inFlight).toBe(0)
  })

  describe('enter', () => {
    it('enters at once when free', async () => {
      const bulkhead = concurrency({ max: 1 })
      const permit = await bulkhead.enter()
      expect([permit.permits, bulkhead.inFlight]).toEqual([1, 1])
    })

    it('serves waiters first in, first out; a release goes to the head before any newcomer', async () => {
      const clock = new ManualClock()
      const bulkhead = concurrency({ max: 2, maxQueue: 10, clock })
      const first = bulkhead.tryEnter(2) as Permit
      const a = track(bulkhead.enter())
      const b = track(bulkhead.enter())
      const c = track(bulkhead.enter())
      expect(bulkhead.queued).toBe(3)
      first.release()
      await flush()
      expect([a.status, b.status, c.status]).toEqual(['resolved', 'resolved', 'pending'])
      // No barging: c waits, so tryAcquire refuses even though a permit may free up.
      a.value?.release()
      await flush()
      expect(c.status).toBe('resolved')
      expect(bulkhead.tryAcquire()).toBe(false)
      expect([bulkhead.inFlight, bulkhead.queued]).toEqual([2, 0])
    })

    it('a large request at the head holds back smaller ones (strict FIFO)', async () => {
      const bulkhead = concurrency({ max: 3, maxQueue: 10 })
      const held = bulkhead.tryEnter(2) as Permit
      const big = track(bulkhead.enter({ permits: 3 }))
      const small = track(bulkhead.enter())
      await flush()
      expect([big.status, small.status]).toEqual(['pending', 'pending'])
      expect(bulkhead.tryAcquire()).toBe(false)
      held.release()
      await flush()
      expect([big.status, small.status]).toEqual(['resolved', 'pending'])
      big.value?.release()
      await flush()
      expect(small.status).toBe('resolved')
    })

    it('rejects with ERR_SLUICE_QUEUE_FULL when the queue is full (default maxQueue 0)', async () => {
      const bulkhead = concurrency({ max: 1, name: 'pool' })
      bulkhead.tryAcquire()
      const error = await bulkhead.enter().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(RateLimitError)
      expect(error).toMatchObject({
        code: 'ERR_SLUICE_QUEUE_FULL',
        limiter: 'pool',
        retryAfterMs: 0,
      })
      const queued = concurrency({ max: 1, maxQueue: 1 })
      queued.tryAcquire()
      void queued.enter()
      await expect(queued.enter()).rejects.toMatchObject({ code: 'ERR_SLUICE_QUEUE_FULL' })
      expect(queued.queued).toBe(1)
    })

    it('times out through the clock, and rejects a zero timeout at once', async () => {
      const clock = new ManualClock()
      const bulkhead = concurrency({ max: 1, maxQueue: 5, clock })
      bulkhead.tryAcquire()
      await expect(bulkhead.enter({ timeout: 0 })).rejects.toMatchObject({
        code: 'ERR_SLUICE_TIMEOUT',
      })
      expect(clock.pendingSleeps).toBe(0)
      const waiting = track(bulkhead.enter({ timeout: '100ms' }))
      clock.advance(99)
      await flush()
      expect(waiting.status).toBe('pending')
      clock.advance(1)
      await flush()
      expect(waiting.status).toBe('rejected')
      expect(waiting.reason).toMatchObject({ code: 'ERR_SLUICE_TIMEOUT', limiter: 'concurrency' })
      expect([bulkhead.queued, bulkhead.inFlight, clock.pendingSleeps]).toEqual([0, 1, 0])
    })

    it('a waiter served before its timeout cancels its timer', async () => {
      const clock = new ManualClock()
      const bulkhead = concurrency({ max: 1, maxQueue: 5, clock })
      bulkhead.tryAcquire()
      const waiting = track(bulkhead.enter({ timeout: '1s' }))
      expect(clock.pendingSleeps).toBe(1)
      bulkhead.release()
      await flush()
      expect(waiting.status).toBe('resolved')
      expect(clock.pendingSleeps).toBe(0)
    })

    it('rejects with the signal reason when aborted before or during the wait, taking nothing', async () => {
      const clock = new ManualClock()
      const bulkhead = concurrency({ max: 1, maxQueue: 5, clock })
      await expect(bulkhead.enter({ signal: AbortSignal.abort('early') })).rejects.toBe('early')
      expect(bulkhead.inFlight).toBe(0)
      bulkhead.tryAcquire()
      const controller = new AbortController()
      const waiting = bulkhead.enter({ signal: controller.signal, timeout: '1m' })
      controller.abort('late')
      await expect(waiting).rejects.toBe('late')
      expect([bulkhead.queued, bulkhead.inFlight, clock.pendingSleeps]).toEqual([0, 1, 0])
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    })

    it('aborting the head lets the waiters behind it in', async () => {
      const bulkhead = concurrency({ max: 2, maxQueue: 5 })
      bulkhead.tryAcquire()
      const controller = new AbortController()
      const big = track(bulkhead.enter({ permits: 2, signal: controller.signal }))
      const small = track(bulkhead.enter())
      controller.abort()
      await flush()
      expect([big.status, small.status]).toEqual(['rejected', 'resolved'])
      expect(bulkhead.inFlight).toBe(2)
    })

    it('rejects more permits than max with ERR_SLUICE_LIMITED and retryAfterMs Infinity', async () => {
      const bulkhead = concurrency({ max: 2, maxQueue: 5 })
      await expect(bulkhead.enter({ permits: 3 })).rejects.toMatchObject({
        code: 'ERR_SLUICE_LIMITED',
        retryAfterMs: Number.POSITIVE_INFINITY,
      })
      expect(bulkhead.queued).toBe(0)
    })

    it('10,000 aborted waits leave no waiter, sleeper or listener behind', async () => {
      const clock = new ManualClock()
      const bulkhead = concurrency({ max: 1, maxQueue: Number.POSITIVE_INFINITY, clock })
      const held = bulkhead.tryEnter() as Permit
      const controller = new AbortController()
      // One signal shared by 10,000 waiters on purpose: not the leak Node's warning suspects.
      setMaxListeners(Number.POSITIVE_INFINITY, controller.signal)
      const waits: Promise<unknown>[] = []
      for (let i = 0; i < 10_000; i++) {
        const timeout = i % 2 === 0 ? { timeout: 60_000 } : {}
        waits.push(bulkhead.enter({ ...timeout, signal: controller.signal }).catch((e) => e))
      }
      expect([bulkhead.queued, clock.pendingSleeps]).toEqual([10_000, 5_000])
      controller.abort('shutdown')
      const reasons = await Promise.all(waits)
      expect(reasons.every((reason) => reason === 'shutdown')).toBe(true)
      expect([bulkhead.queued, bulkhead.inFlight, clock.pendingSleeps]).toEqual([0, 1, 0])
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
      held.release()
      expect(bulkhead.inFlight).toBe(0)
    })
  })
})
