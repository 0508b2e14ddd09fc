import { describe, expect, it } from 'vitest'
import { gradient2 } from './gradient2'
import type { SampleWindow } from './sample-window'

const window = (rtt: number, maxInFlight: number, dropped = false): SampleWindow => ({
  rtt,
  noLoadRtt: 10,
  maxInFlight,
  dropped,
})

describe('gradient2', () => {
  const step = gradient2('test', {})

  // Defaults: tolerance 1.5, smoothing 0.2, queueSize max(4, √limit); no-load latency 10 ms.
  // new = limit × 0.8 + (limit × clamp(1.5 × 10 / rtt, 0.5, 1) + queueSize) × 0.2
  it.each([
    ['no queueing: grows by smoothing × queueSize', 100, window(10, 100), 102],
    ['within tolerance (1.5 × no-load): still grows', 100, window(15, 100), 102],
    ['twice the no-load latency: gradient 0.75', 100, window(20, 100), 97],
    ['four times: the gradient stops at 0.5', 100, window(40, 100), 92],
    ['a small limit still gets 4 of headroom', 16, window(10, 16), 16.8],
    ['app-limited (under half in flight): unchanged', 100, window(40, 49), 100],
    ['half in flight is not app-limited', 100, window(40, 50), 92],
    ['drops are not a signal; their latency is', 100, window(10, 100, true), 102],
    ['a zero-length window shows no queueing', 100, window(0, 100), 102],
  ])('%s', (_, limit, w, expected) => {
    expect(step(limit, w)).toBeCloseTo(expected, 10)
  })

  it('takes tolerance, smoothing and a fixed queue size', () => {
    const plain = gradient2('test', { tolerance: 1, smoothing: 1, queueSize: 0 })
    expect(plain(100, window(12.5, 100))).toBeCloseTo(80, 10)
    expect(plain(100, window(20, 100))).toBe(50)
    expect(plain(100, window(10, 100))).toBe(100)
  })

  it('takes queueSize as a function of the limit; a bad answer adds nothing', () => {
    const tenth = gradient2('test', { smoothing: 1, queueSize: (limit) => limit / 10 })
    expect(tenth(100, window(10, 100))).toBe(110)
    const broken = gradient2('test', { smoothing: 1, queueSize: () => Number.NaN })
    expect(broken(100, window(10, 100))).toBe(100)
  })
})
