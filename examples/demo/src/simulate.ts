import {
  concurrency,
  fixedWindow,
  leakyBucket,
  ManualClock,
  type RateLimiter,
  slidingWindow,
  tokenBucket,
  warmUpTokenBucket,
} from '@sluice/core'

/** One limiter's run through the demo traffic: one entry per tick. */
export interface Series {
  algorithm: string
  /** What the chart's second row shows: permits admitted, or (bulkhead) requests in flight. */
  measure: 'admitted' | 'in flight'
  caption: string
  offered: number[]
  admitted: number[]
}

/** Every limiter in the demo allows 10 per second; the traffic is read in 100 ms ticks. */
export const LIMIT = 10
export const WINDOW_MS = 1000
export const TICK_MS = 100
export const TICKS = 60

/**
 * The same bursty traffic for every limiter, requests per 100 ms tick:
 * quiet for a second (buckets fill), an overload of 3 per tick (30/s, three times the
 * limit) for two seconds, quiet again, then 12 requests in the last tick before the
 * 4 s boundary and 12 in the first tick after it, then the overload again to the end.
 */
export function offeredAt(tick: number): number {
  if (tick < 10) return 0
  if (tick < 30) return 3
  if (tick === 39 || tick === 40) return 12
  if (tick < 41) return 0
  return 3
}

function runRate(limiter: RateLimiter, clock: ManualClock): number[] {
  const admitted: number[] = []
  for (let tick = 0; tick < TICKS; tick++) {
    let passed = 0
    const offered = offeredAt(tick)
    // Requests inside a tick arrive evenly spread, as real traffic would.
    for (let i = 0; i < offered; i++) {
      clock.set(tick * TICK_MS + (i * TICK_MS) / offered)
      if (limiter.tryAcquire()) passed++
    }
    admitted.push(passed)
  }
  return admitted
}

/** A bulkhead of 4 around a handler that takes 350 ms: the chart shows requests in flight. */
function runBulkhead(): number[] {
  const bulkhead = concurrency({ max: 4 })
  const finishing: number[] = []
  const inFlight: number[] = []
  for (let tick = 0; tick < TICKS; tick++) {
    for (let i = finishing.length - 1; i >= 0; i--) {
      if ((finishing[i] ?? 0) <= tick) {
        bulkhead.release()
        finishing.splice(i, 1)
      }
    }
    for (let i = 0; i < offeredAt(tick); i++) {
      if (bulkhead.tryAcquire()) finishing.push(tick + 3.5)
    }
    inFlight.push(bulkhead.inFlight)
  }
  return inFlight
}

/** Runs the demo traffic through all six limiters, each on its own ManualClock. */
export function simulate(): Series[] {
  const offered = Array.from({ length: TICKS }, (_, tick) => offeredAt(tick))
  const rate = (
    algorithm: string,
    caption: string,
    make: (clock: ManualClock) => RateLimiter,
  ): Series => {
    const clock = new ManualClock()
    return {
      algorithm,
      measure: 'admitted',
      caption,
      offered,
      admitted: runRate(make(clock), clock),
    }
  }
  return [
    rate('token bucket', 'burst of 10 from the idle second, then the steady 1 per tick', (clock) =>
      tokenBucket({ limit: LIMIT, window: WINDOW_MS, clock }),
    ),
    rate('leaky bucket', 'flat top: never more than 1 per tick, idle saves nothing', (clock) =>
      leakyBucket({ limit: LIMIT, window: WINDOW_MS, clock }),
    ),
    rate(
      'sliding window',
      'saw-tooth: 10 in any rolling second, refilled as slots expire',
      (clock) => slidingWindow({ limit: LIMIT, window: WINDOW_MS, clock }),
    ),
    rate('fixed window', 'double burst: 10 before the 4 s boundary and 10 right after', (clock) =>
      fixedWindow({ limit: LIMIT, window: WINDOW_MS, clock }),
    ),
    rate('warm-up', 'ramp: a third of the rate when cold, full rate after 5 s of age', (clock) =>
      warmUpTokenBucket({ limit: LIMIT, window: WINDOW_MS, warmUp: '5s', clock }),
    ),
    {
      algorithm: 'bulkhead',
      measure: 'in flight',
      caption: 'plateau: 4 in flight at most, whatever the rate',
      offered,
      admitted: runBulkhead(),
    },
  ]
}
