import { describe, expect, it } from 'vitest'
import { EXACT_RATE } from '../src/config'
import { contender } from '../src/contenders'
import {
  admittedTimes,
  EXACTNESS_SCENARIOS,
  exactnessContenders,
  maxInSpan,
  runExactness,
} from '../src/exactness'

const scenario = (name: string) => EXACTNESS_SCENARIOS.find((s) => s.name === name)!
const { limit, windowMs } = EXACT_RATE

describe('maxInSpan', () => {
  it('counts the most times in any half-open span', () => {
    expect(maxInSpan([], 1000)).toBe(0)
    expect(maxInSpan([0, 10, 990, 1000], 1000)).toBe(3)
    expect(maxInSpan([0, 999, 1000, 1001, 1998], 1000)).toBe(4)
  })
})

describe('scenarios', () => {
  it('send 250 requests each, sorted, the boundary one packed around 1 s', () => {
    for (const s of EXACTNESS_SCENARIOS) {
      expect(s.times).toHaveLength(250)
      expect([...s.times].sort((a, b) => a - b)).toEqual(s.times)
    }
    const boundary = scenario('boundary').times
    expect(boundary.filter((t) => t >= 750 && t < 1000)).toHaveLength(125)
    expect(boundary.filter((t) => t >= 1000 && t < 1250)).toHaveLength(124)
  })
})

describe('sluice algorithms keep their guarantees', () => {
  it('sliding window: at most the limit in any rolling second', async () => {
    for (const s of EXACTNESS_SCENARIOS) {
      const times = await admittedTimes(contender('sluice/sliding-window'), s.times)
      expect(maxInSpan(times, windowMs)).toBeLessThanOrEqual(limit)
    }
  })

  it('leaky bucket: never two admissions closer than window / limit', async () => {
    for (const s of EXACTNESS_SCENARIOS) {
      const times = await admittedTimes(contender('sluice/leaky-bucket'), s.times)
      for (let i = 1; i < times.length; i++) {
        expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(windowMs / limit)
      }
      expect(maxInSpan(times, windowMs)).toBeLessThanOrEqual(limit)
    }
  })

  it('token bucket: admits exactly what the inline GCRA floor admits, within capacity + rate·t', async () => {
    for (const s of EXACTNESS_SCENARIOS) {
      const ours = await admittedTimes(contender('sluice/token-bucket'), s.times)
      // Two implementations, two ways of simulating time (ManualClock, fake timers).
      expect(ours).toEqual(await admittedTimes(contender('floor/gcra-map'), s.times))
      expect(maxInSpan(ours, windowMs)).toBeLessThanOrEqual(2 * limit)
    }
  })

  it('fixed window: at most the limit per aligned window, and up to twice it across the boundary', async () => {
    for (const s of EXACTNESS_SCENARIOS) {
      const times = await admittedTimes(contender('sluice/fixed-window'), s.times)
      for (let start = 0; start < 3000; start += windowMs) {
        expect(times.filter((t) => t >= start && t < start + windowMs).length).toBeLessThanOrEqual(
          limit,
        )
      }
    }
    const boundary = await admittedTimes(
      contender('sluice/fixed-window'),
      scenario('boundary').times,
    )
    expect(maxInSpan(boundary, windowMs)).toBeGreaterThan(limit)
    expect(maxInSpan(boundary, windowMs)).toBeLessThanOrEqual(2 * limit)
  })

  it('warm-up: never admits more than the token bucket it warms into', async () => {
    for (const s of EXACTNESS_SCENARIOS) {
      const warming = await admittedTimes(contender('sluice/warm-up'), s.times)
      const warm = await admittedTimes(contender('sluice/token-bucket'), s.times)
      expect(warming.length).toBeLessThanOrEqual(warm.length)
      expect(maxInSpan(warming, windowMs)).toBeLessThanOrEqual(maxInSpan(warm, windowMs))
    }
  })
})

describe('peers under fake timers', () => {
  it('restores the real clocks afterwards', async () => {
    const before = Date.now()
    await admittedTimes(contender('peer/express-rate-limit'), scenario('boundary').times)
    // The fake clock starts in 2023: a clock left faked would read before `before`.
    expect(Date.now()).toBeGreaterThanOrEqual(before)
  })

  it('the fixed-window peers let a second quota through at their window boundary', async () => {
    const results = await runExactness(
      ['express-rate-limit', 'hono-rate-limiter', 'rate-limiter-flexible', 'koa-ratelimit'].map(
        (peer) => contender(`peer/${peer}`),
      ),
    )
    for (const r of results) {
      expect(r.clock).toBe('fake timers')
      expect(r.outcomes.boundary!.maxPerSecond).toBeGreaterThan(limit)
      expect(r.outcomes.boundary!.maxPerSecond).toBeLessThanOrEqual(2 * limit)
      expect(r.outcomes.even!.maxPerSecond).toBeLessThanOrEqual(limit)
    }
  })

  it('runs the floor, the five time-based sluice algorithms and every peer', () => {
    expect(exactnessContenders().map((c) => c.id)).toEqual([
      'floor/gcra-map',
      'sluice/token-bucket',
      'sluice/leaky-bucket',
      'sluice/sliding-window',
      'sluice/fixed-window',
      'sluice/warm-up',
      'peer/express-rate-limit',
      'peer/hono-rate-limiter',
      'peer/rate-limiter-flexible',
      'peer/koa-ratelimit',
      'peer/limiter-rate-limiter',
      'peer/limiter-token-bucket',
    ])
  })
})
