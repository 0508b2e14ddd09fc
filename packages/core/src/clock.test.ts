import { getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { ManualClock, systemClock } from './clock'

describe('ManualClock', () => {
  it('starts at startMs and moves only when told', () => {
    const clock = new ManualClock(100)
    expect(clock.now()).toBe(100)
    clock.advance(5)
    expect(clock.now()).toBe(105)
    clock.set(200)
    expect(clock.now()).toBe(200)
    clock.advance(0)
    expect(clock.now()).toBe(200)
    expect(new ManualClock().now()).toBe(0)
  })

  it('resolves sleepers in deadline order, equal deadlines first come first served', async () => {
    const clock = new ManualClock()
    const woke: string[] = []
    const sleeps = [
      clock.sleep(30).then(() => woke.push('c@30')),
      clock.sleep(10).then(() => woke.push('a@10')),
      clock.sleep(20).then(() => woke.push('b1@20')),
      clock.sleep(20).then(() => woke.push('b2@20')),
    ]
    expect(clock.pendingSleeps).toBe(4)
    clock.advance(19)
    await Promise.resolve()
    expect(woke).toEqual(['a@10'])
    clock.advance(1)
    await Promise.resolve()
    expect(woke).toEqual(['a@10', 'b1@20', 'b2@20'])
    clock.set(100)
    await Promise.all(sleeps)
    expect(woke).toEqual(['a@10', 'b1@20', 'b2@20', 'c@30'])
    expect(clock.pendingSleeps).toBe(0)
  })

  it('resolves a sleep of zero or less at once', async () => {
    const clock = new ManualClock()
    await clock.sleep(0)
    await clock.sleep(-5)
    expect(clock.pendingSleeps).toBe(0)
  })

  it('rejects with the reason when aborted before sleeping, and registers nothing', async () => {
    const clock = new ManualClock()
    const reason = new Error('stop')
    const signal = AbortSignal.abort(reason)
    await expect(clock.sleep(10, signal)).rejects.toBe(reason)
    expect(clock.pendingSleeps).toBe(0)
  })

  it('rejects with the reason when aborted while sleeping, leaving no sleeper or listener', async () => {
    const clock = new ManualClock()
    const controller = new AbortController()
    const sleep = clock.sleep(10, controller.signal)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    controller.abort('gone')
    await expect(sleep).rejects.toBe('gone')
    expect(clock.pendingSleeps).toBe(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('removes the abort listener when a sleep completes', async () => {
    const clock = new ManualClock()
    const controller = new AbortController()
    const sleep = clock.sleep(10, controller.signal)
    clock.advance(10)
    await sleep
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('advanceAsync stops at each deadline so code that sleeps again sees exact times', async () => {
    const clock = new ManualClock()
    const seen: number[] = []
    const loop = (async () => {
      for (let i = 0; i < 4; i++) {
        await clock.sleep(10)
        seen.push(clock.now())
      }
    })()
    await clock.advanceAsync(35)
    expect(seen).toEqual([10, 20, 30])
    expect(clock.now()).toBe(35)
    await clock.advanceAsync(5)
    await loop
    expect(seen).toEqual([10, 20, 30, 40])
  })

  it('advance jumps straight to the target, which a re-sleeping loop observes once', async () => {
    const clock = new ManualClock()
    const seen: number[] = []
    void (async () => {
      await clock.sleep(10)
      seen.push(clock.now())
      await clock.sleep(10)
      seen.push(clock.now())
    })()
    clock.advance(35)
    await new Promise((resolve) => setImmediate(resolve))
    expect(seen).toEqual([35])
    expect(clock.pendingSleeps).toBe(1)
  })

  it.each([
    [
      'advance',
      (clock: ManualClock) => clock.advance(-1),
      'ManualClock.advance: "ms" must be a finite non-negative number, got -1',
    ],
    [
      'advance',
      (clock: ManualClock) => clock.advance(Number.NaN),
      'ManualClock.advance: "ms" must be a finite non-negative number, got NaN',
    ],
    [
      'set',
      (clock: ManualClock) => clock.set(99),
      'ManualClock.set: "ms" must be a finite number not before now (100), got 99',
    ],
    [
      'set',
      (clock: ManualClock) => clock.set(Number.POSITIVE_INFINITY),
      'ManualClock.set: "ms" must be a finite number not before now (100), got Infinity',
    ],
  ])('%s rejects bad input with a RangeError', (_, act, message) => {
    const clock = new ManualClock(100)
    expect(() => act(clock)).toThrow(new RangeError(message))
    expect(clock.now()).toBe(100)
  })

  it('rejects a non-finite start', () => {
    expect(() => new ManualClock(Number.NaN)).toThrow(
      new RangeError('ManualClock: "startMs" must be a finite number, got NaN'),
    )
  })

  it('advanceAsync rejects a negative step', async () => {
    await expect(new ManualClock().advanceAsync(-1)).rejects.toThrow(
      'ManualClock.advanceAsync: "ms" must be a finite non-negative number, got -1',
    )
  })
})

// These check systemClock's own contract (monotonic, never early, abortable); no
// limiter behaviour is tested on real time.
describe('systemClock', () => {
  it('is monotonic', () => {
    let last = systemClock.now()
    for (let i = 0; i < 1000; i++) {
      const now = systemClock.now()
      expect(now).toBeGreaterThanOrEqual(last)
      last = now
    }
  })

  it('never resolves a sleep before now() reaches the deadline', async () => {
    const started = systemClock.now()
    await systemClock.sleep(15)
    expect(systemClock.now() - started).toBeGreaterThanOrEqual(15)
  })

  it('rejects with the reason when aborted before or during a sleep, leaving no listener', async () => {
    await expect(systemClock.sleep(10, AbortSignal.abort('before'))).rejects.toBe('before')
    const controller = new AbortController()
    const sleep = systemClock.sleep(60_000, controller.signal)
    controller.abort('during')
    await expect(sleep).rejects.toBe('during')
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })
})
