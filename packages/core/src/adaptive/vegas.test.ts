import { describe, expect, it } from 'vitest'
import type { SampleWindow } from './sample-window'
import { vegas } from './vegas'

const window = (noLoadRtt: number, maxInFlight: number, dropped = false): SampleWindow => ({
  rtt: 10,
  noLoadRtt,
  maxInFlight,
  dropped,
})

describe('vegas', () => {
  const step = vegas('test', {})

  // queue = limit × (1 − noLoadRtt / rtt), rtt 10 ms. At limit 100, log10 = 2: queue ≤ 2
  // grows by beta × 2 = 12, under alpha × 2 = 6 by 2, over 12 shrinks by 2, else holds.
  it.each([
    ['no queue: the fast increase', 100, window(10, 100), 112],
    ['queue 1 (≤ log10 limit): the fast increase', 100, window(9.9, 100), 112],
    ['queue 5 (< alpha): grows by log10', 100, window(9.5, 100), 102],
    ['queue 10 (between alpha and beta): holds', 100, window(9, 100), 100],
    ['queue 20 (> beta): shrinks by log10', 100, window(8, 100), 98],
    ['latency below the no-load one counts as no queue', 100, window(12, 100), 112],
    ['a drop shrinks by log10', 100, window(10, 100, true), 98],
    ['a drop shrinks even when app-limited', 100, window(10, 10, true), 98],
    ['app-limited: unchanged', 100, window(8, 49), 100],
    // Below 10 the step is 1, not log10 (< 1): thresholds 1, 3 and 6.
    ['small limit, no queue: grows by beta', 5, window(10, 5), 11],
    ['small limit, queue 2: grows by 1', 5, window(6, 5), 6],
    ['small limit, queue 4.5: holds', 5, window(1, 5), 5],
  ])('%s', (_, limit, w, expected) => {
    expect(step(limit, w)).toBeCloseTo(expected, 10)
  })

  it('takes alpha, beta and smoothing', () => {
    const wide = vegas('test', { alpha: 1, beta: 20, smoothing: 0.5 })
    // Queue 10 is over alpha × 2 and under beta × 2: hold; no queue: +40, half of it blended.
    expect(wide(100, window(9, 100))).toBe(100)
    expect(wide(100, window(10, 100))).toBe(120)
  })
})
