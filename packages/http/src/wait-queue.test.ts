import { ManualClock } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { KeyedWaitQueue, type Waiter } from './wait-queue'

const never = new AbortController().signal

/** One turn of the event loop: every promise callback queued so far has run. No time passes. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Tracks whether a sleep has ended, and how. */
function watch(sleep: Promise<void>) {
  const state = { ended: false, error: undefined as unknown }
  sleep.then(
    () => {
      state.ended = true
    },
    (error: unknown) => {
      state.ended = true
      state.error = error
    },
  )
  return state
}

describe('KeyedWaitQueue', () => {
  it('keeps one FIFO per key: only the head asks, leaving hands the head on', () => {
    const queue = new KeyedWaitQueue(new ManualClock())
    const [a, b, c] = [1, 2, 3].map(() => queue.join('k', 10)) as Waiter[]
    const other = queue.join('other', 10)!
    expect([queue.isHead(a!), queue.isHead(b!), queue.isHead(c!)]).toEqual([true, false, false])
    expect(queue.isHead(other)).toBe(true)
    expect([queue.size('k'), queue.size('other'), queue.size('none')]).toEqual([3, 1, 0])
    queue.leave(a!)
    expect([queue.isHead(b!), queue.isHead(c!)]).toEqual([true, false])
    queue.leave(c!)
    queue.leave(c!)
    expect(queue.size('k')).toBe(1)
    queue.leave(b!)
    expect([queue.has('k'), queue.size('k'), queue.has('other')]).toEqual([false, 0, true])
  })

  it('refuses to join past maxQueue under one key, not across keys', () => {
    const queue = new KeyedWaitQueue(new ManualClock())
    expect(queue.join('k', 0)).toBeUndefined()
    expect(queue.has('k')).toBe(false)
    const first = queue.join('k', 2)
    expect(queue.join('k', 2)).toBeDefined()
    expect(queue.join('k', 2)).toBeUndefined()
    expect(queue.join('j', 2)).toBeDefined()
    queue.leave(first!)
    expect(queue.join('k', 2)).toBeDefined()
  })

  it('sleeps until its time on the clock', async () => {
    const clock = new ManualClock()
    const queue = new KeyedWaitQueue(clock)
    const me = queue.join('k', 1)!
    const sleep = watch(queue.sleep(me, 1_000, never))
    await clock.advanceAsync(999)
    expect(sleep.ended).toBe(false)
    await clock.advanceAsync(1)
    expect(sleep).toEqual({ ended: true, error: undefined })
    expect(clock.pendingSleeps).toBe(0)
  })

  it('a wake-up ends the sleep early and cancels its timer', async () => {
    const clock = new ManualClock()
    const queue = new KeyedWaitQueue(clock)
    const me = queue.join('k', 1)!
    const sleep = watch(queue.sleep(me, 1_000, never))
    expect(clock.pendingSleeps).toBe(1)
    queue.wake('k')
    await turn()
    expect(sleep).toEqual({ ended: true, error: undefined })
    expect(clock.pendingSleeps).toBe(0)
    queue.wake('nobody')
  })

  it('a wake-up that comes before the sleep is not lost', async () => {
    const clock = new ManualClock()
    const queue = new KeyedWaitQueue(clock)
    const me = queue.join('k', 1)!
    // The head was busy asking the store when a slot was released.
    queue.wake('k')
    expect(me.woken).toBe(true)
    const sleep = watch(queue.sleep(me, Number.POSITIVE_INFINITY, never))
    await turn()
    expect(sleep).toEqual({ ended: true, error: undefined })
    expect(me.woken).toBe(false)
    // Used up: the next sleep waits again.
    const next = watch(queue.sleep(me, 500, never))
    await turn()
    expect(next.ended).toBe(false)
    await clock.advanceAsync(500)
    expect(next.ended).toBe(true)
  })

  it('a waiter that leaves wakes the new head, and only it', async () => {
    const clock = new ManualClock()
    const queue = new KeyedWaitQueue(clock)
    const head = queue.join('k', 3)!
    const second = queue.join('k', 3)!
    const third = queue.join('k', 3)!
    const secondSleep = watch(queue.sleep(second, Number.POSITIVE_INFINITY, never))
    const thirdSleep = watch(queue.sleep(third, Number.POSITIVE_INFINITY, never))
    queue.leave(head)
    await turn()
    expect([secondSleep.ended, thirdSleep.ended]).toEqual([true, false])
    expect(queue.isHead(second)).toBe(true)
    // A waiter behind the head leaving wakes nobody.
    const again = watch(queue.sleep(second, Number.POSITIVE_INFINITY, never))
    queue.leave(third)
    await turn()
    expect([again.ended, thirdSleep.ended]).toEqual([false, false])
  })

  it('an abort rejects the sleep with the reason and cancels its timer', async () => {
    const clock = new ManualClock()
    const queue = new KeyedWaitQueue(clock)
    const me = queue.join('k', 1)!
    const client = new AbortController()
    const timed = queue.sleep(me, 1_000, client.signal)
    const reason = new Error('client gone')
    client.abort(reason)
    await expect(timed).rejects.toBe(reason)
    expect(clock.pendingSleeps).toBe(0)
    const endless = new AbortController()
    const forever = queue.sleep(me, Number.POSITIVE_INFINITY, endless.signal)
    endless.abort(reason)
    await expect(forever).rejects.toBe(reason)
    await expect(queue.sleep(me, 1_000, client.signal)).rejects.toBe(reason)
    expect(clock.pendingSleeps).toBe(0)
  })

  it('an abort wins over a wake-up that came in the same turn', async () => {
    const queue = new KeyedWaitQueue(new ManualClock())
    const me = queue.join('k', 1)!
    const client = new AbortController()
    const sleep = queue.sleep(me, Number.POSITIVE_INFINITY, client.signal)
    queue.wake('k')
    const reason = new Error('client gone')
    client.abort(reason)
    await expect(sleep).rejects.toBe(reason)
  })
})
