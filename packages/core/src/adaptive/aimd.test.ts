import { describe, expect, it } from 'vitest'
import { aimd } from './aimd'
import type { SampleWindow } from './sample-window'

const window = (rtt: number, maxInFlight: number, dropped = false): SampleWindow => ({
  rtt,
  noLoadRtt: 10,
  maxInFlight,
  dropped,
})

describe('aimd', () => {
  const step = aimd('test', {})

  // Defaults: backoffRatio 0.9, tolerance 2 (a window over 20 ms is congested).
  it.each([
    ['a healthy window adds one', 20, window(10, 20), 21],
    ['latency at exactly the tolerance is still healthy', 20, window(20, 20), 21],
    ['app-limited (under half in flight): unchanged', 20, window(10, 9), 20],
    ['half in flight is not app-limited', 20, window(10, 10), 21],
    ['a drop multiplies by 0.9', 20, window(10, 20, true), 18],
    ['latency over the tolerance is congestion too', 20, window(20.5, 20), 18],
    ['congestion is congestion even when app-limited', 20, window(30, 5), 18],
    ['the backoff rounds down', 15, window(10, 15, true), 13],
    ['and always takes at least one', 5, window(10, 5, true), 4],
    ['down to zero: the limiter clamps to min', 1, window(10, 1, true), 0],
  ])('%s', (_, limit, w, expected) => {
    expect(step(limit, w)).toBe(expected)
  })

  it('takes backoffRatio, and tolerance Infinity to react to drops alone', () => {
    const halving = aimd('test', { backoffRatio: 0.5 })
    expect(halving(20, window(10, 20, true))).toBe(10)
    const dropsOnly = aimd('test', { tolerance: Number.POSITIVE_INFINITY })
    expect(dropsOnly(20, window(10_000, 20))).toBe(21)
    expect(dropsOnly(20, window(10, 20, true))).toBe(18)
  })
})
