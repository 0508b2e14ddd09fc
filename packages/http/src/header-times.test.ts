import { ManualClock } from '@sluice/core'
import { memoryStore } from '@sluice/keyed'
import type { PolicyOptions } from '@sluice/keyed/store'
import { isPromiseLike } from '@sluice/keyed/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import { RateLimitEngine } from './rate-limit-engine'

/**
 * DESIGN §7 "Header times": `t` follows draft -10 (seconds until more quota). On a refusal
 * at cost 1, the refusing policy with the longest wait has `t` equal to `Retry-After`, no
 * refusing policy's `t` is later than `Retry-After`, and `r` is never negative; for any
 * policies and any arrivals.
 */

type FakeResponse = Map<string, string>

const request: RequestAccessors<unknown> = {
  ip: () => '10.0.0.1',
  method: () => 'GET',
  path: () => '/',
  route: () => undefined,
  header: () => undefined,
}
const response: ResponseAccessors<unknown, FakeResponse> = {
  getHeader: (res, name) => res.get(name),
  setHeader: (res, name, value) => void res.set(name, value),
  signal: () => new AbortController().signal,
}

/** Durations as strings, so windows under a second do not trip the milliseconds warning. */
const ms = (min: number, max: number) => fc.integer({ min, max }).map((n) => `${n}ms` as const)
const limit = fc.integer({ min: 1, max: 20 })
const window = ms(100, 120_000)

const policy: fc.Arbitrary<PolicyOptions> = fc.oneof(
  fc.record({
    algorithm: fc.constant('sliding-window' as const),
    limit,
    window,
    slots: fc.integer({ min: 1, max: 10 }),
  }),
  fc.record({
    algorithm: fc.constant('token-bucket' as const),
    limit,
    window,
    capacity: fc.integer({ min: 1, max: 40 }),
  }),
  fc.record({ algorithm: fc.constant('leaky-bucket' as const), limit, window }),
  fc.record({ algorithm: fc.constant('fixed-window' as const), limit, window }),
  fc.record({
    algorithm: fc.constant('warm-up' as const),
    limit,
    window,
    warmUp: ms(100, 300_000),
  }),
)

const withBlock = (base: fc.Arbitrary<PolicyOptions>) =>
  fc
    .tuple(
      base,
      fc.option(fc.record({ for: ms(100, 300_000), after: fc.integer({ min: 1, max: 3 }) })),
    )
    .map(([options, block]) => (block === null ? options : { ...options, block }))

/** Gaps between arrivals: bursts (0), short pauses and long idles, fractions included. */
const gap = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 1, max: 2_000 }),
  fc.integer({ min: 1, max: 200_000 }),
  fc.double({ min: 0, max: 5_000, noNaN: true }),
)

interface Item {
  readonly r: number
  readonly t: number
}

/** Parses a draft-8 `RateLimit` field: `"p0";r=5;t=3, "p1";r=0;t=12`. */
function items(field: string | undefined): Map<string, Item> {
  const parsed = new Map<string, Item>()
  for (const match of (field ?? '').matchAll(/"([^"]+)";r=(-?\d+);t=(-?\d+)/g)) {
    parsed.set(match[1]!, { r: Number(match[2]), t: Number(match[3]) })
  }
  return parsed
}

function checkArrivals(specs: readonly PolicyOptions[], gaps: readonly number[]): void {
  const clock = new ManualClock()
  const engine = new RateLimitEngine<unknown, FakeResponse>({
    options: {
      policies: specs.map((spec, i) => ({ ...spec, name: `p${i}` })),
      key: () => 'k',
      clock,
      // One key: a small LRU, since lru-cache allocates its index for maxKeys up front.
      store: memoryStore({ clock, maxKeys: 8 }),
    },
    request,
    response,
  })
  for (const ms of gaps) {
    clock.advance(ms)
    const res: FakeResponse = new Map()
    const outcome = engine.admit({}, res)
    if (isPromiseLike(outcome)) throw new Error('the memory store answers synchronously')
    const shown = items(res.get('RateLimit'))
    expect(shown.size).toBe(specs.length)
    for (const item of shown.values()) expect(item.r).toBeGreaterThanOrEqual(0)
    if (outcome.action !== 'refuse') continue
    const retryAfter = Number(res.get('Retry-After'))
    expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true)
    const refusing = outcome.decision!.results.filter((r) => !r.allowed)
    expect(refusing.length).toBeGreaterThan(0)
    const longest = refusing.reduce((a, b) => (b.retryAfterMs > a.retryAfterMs ? b : a))
    expect(shown.get(longest.policy.name)?.t).toBe(retryAfter)
    for (const r of refusing) {
      expect(shown.get(r.policy.name)!.t).toBeLessThanOrEqual(retryAfter)
    }
  }
}

describe('header times (DESIGN §7), at cost 1', () => {
  it('t of the longest refusing wait is Retry-After, none later; r never negative', () => {
    fc.assert(
      fc.property(
        fc.array(policy, { minLength: 1, maxLength: 3 }),
        fc.array(gap, { minLength: 1, maxLength: 40 }),
        checkArrivals,
      ),
      { numRuns: 1000 },
    )
  })

  it('holds with penalties (block) too', () => {
    fc.assert(
      fc.property(
        fc.array(withBlock(policy), { minLength: 1, maxLength: 3 }),
        fc.array(gap, { minLength: 1, maxLength: 40 }),
        checkArrivals,
      ),
      { numRuns: 1000 },
    )
  })
})
