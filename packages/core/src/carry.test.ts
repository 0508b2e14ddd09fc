import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { normalizeSpec, rateKernel } from './algorithms'
import { CARRY_MODES } from './carry'
import type { RateKernel } from './kernel'
import type { Carry, NormalizedRateSpec, RateLimiterSpec } from './types'

/** A one-row kernel of `spec` (normalized or not), fresh at `now`. */
function kernelOf(spec: RateLimiterSpec | NormalizedRateSpec, now = 0): RateKernel {
  const kernel = rateKernel(normalizeSpec(spec as RateLimiterSpec) as NormalizedRateSpec)
  kernel.resize(1)
  kernel.clear(0, now)
  return kernel
}

/** A one-row kernel of `spec` holding `from`'s row carried over at `now`. */
function into(
  spec: RateLimiterSpec | NormalizedRateSpec,
  now: number,
  from: RateKernel,
  carry: Carry,
): RateKernel {
  const kernel = kernelOf(spec, now)
  kernel.carry(0, now, from, 0, carry)
  return kernel
}

function carried(from: RateKernel, spec: RateLimiterSpec, now: number, carry: Carry): RateKernel {
  return into(spec, now, from, carry)
}

function rowOf(kernel: RateKernel): number[] {
  const state = new Array<number>(kernel.width)
  kernel.read(0, state)
  return state
}

// Bucket4j's ConfigurationReplacementSpecification, in milliseconds where it counts in
// nanoseconds (our windows are whole microseconds). Cases that need features we do not
// have (interval refill, several bandwidths matched by id, tokens forced above capacity)
// are left out.
describe("Bucket4j's replacement cases", () => {
  /** capacity 3, refilled 3 per 5 ms, emptied at 0, then 3 ms of refill: 1.8 tokens. */
  function threePerFive(): RateKernel {
    const kernel = kernelOf({ algorithm: 'token-bucket', limit: 3, window: 5 })
    kernel.take(0, 0, 3)
    return kernel
  }
  const sixtyPerSecond: RateLimiterSpec = { algorithm: 'token-bucket', limit: 60, window: 1000 }

  it('reset forgets what was consumed', () => {
    const kernel = carried(threePerFive(), sixtyPerSecond, 3, 'reset')
    expect(kernel.available(0, 3)).toBe(60)
  })

  it('as-is keeps 1.8 tokens, the fraction included', () => {
    const kernel = carried(threePerFive(), sixtyPerSecond, 3, 'as-is')
    expect(kernel.available(0, 3)).toBe(1)
    expect(kernel.available(0, 7)).toBe(2) // 1.8 + 60·4/1000 = 2.04
  })

  it('additive adds the capacity gained: 1.8 + 57', () => {
    const kernel = carried(threePerFive(), sixtyPerSecond, 3, 'additive')
    expect(kernel.available(0, 3)).toBe(58)
    expect(kernel.available(0, 7)).toBe(59) // 58.8 + 0.24
  })

  it('proportional scales 1.8 by 60/3, and refills at the new rate from there', () => {
    const kernel = carried(threePerFive(), sixtyPerSecond, 3, 'proportional')
    expect(kernel.available(0, 3)).toBe(36)
    expect(kernel.available(0, 7)).toBe(36) // 36.24
    expect(kernel.available(0, 20)).toBe(37) // 36 + 60·17/1000 = 37.02
  })

  const fiveHundred: RateLimiterSpec = {
    algorithm: 'token-bucket',
    limit: 100,
    window: 100,
    capacity: 500,
  }
  const twoHundred: RateLimiterSpec = { ...fiveHundred, capacity: 200 }
  it.each(['as-is', 'additive', 'proportional'] as const)(
    '%s cuts a full 500 down to the new capacity 200',
    (carry) => {
      expect(carried(kernelOf(fiveHundred), twoHundred, 0, carry).available(0, 0)).toBe(200)
    },
  )

  it('additive raises 200 of 500 to 600 of 900', () => {
    const kernel = kernelOf(fiveHundred)
    kernel.take(0, 0, 300)
    const raised = carried(kernel, { ...fiveHundred, capacity: 900 }, 0, 'additive')
    expect(raised.available(0, 0)).toBe(600)
  })

  it('proportional carries the fraction of a token: 2.25 of 6 become 1.125 of 3', () => {
    const kernel = kernelOf({ algorithm: 'token-bucket', limit: 6, window: 8 })
    kernel.take(0, 0, 6)
    const halved = carried(
      kernel,
      { algorithm: 'token-bucket', limit: 3, window: 8 },
      3,
      'proportional',
    )
    expect(halved.available(0, 3)).toBe(1)
    // 0.875 more at 3 per 8 ms: 2.333… ms, rounded up to the microsecond.
    expect(halved.wait(0, 3, 2)).toBe(2.334)
  })

  it('proportional keeps the instant a debt is paid off (Bucket4j: −2.75 of 6 → −1.375 of 3, the same instant)', () => {
    const kernel = kernelOf({ algorithm: 'token-bucket', limit: 6, window: 8 })
    kernel.take(0, 0, 6)
    kernel.force(0, 3, 5) // 2.25 − 5 = −2.75: paid off 2.75 · 8/6 = 3.666… ms later
    const halved = carried(
      kernel,
      { algorithm: 'token-bucket', limit: 3, window: 8 },
      3,
      'proportional',
    )
    expect(halved.available(0, 3)).toBe(0)
    expect(halved.available(0, 6.666)).toBe(0)
    // Paid off at 6.666… ms, then one token at 3 per 8 ms: 2.666… ms more.
    expect(halved.wait(0, 3, 1)).toBe(6.334)
    expect(kernel.wait(0, 3, 1)).toBe(5) // the old spec: one token 1.333… ms after
  })
})

type Algo = 'token-bucket' | 'leaky-bucket' | 'sliding-window' | 'fixed-window' | 'warm-up'
const ALGOS: readonly Algo[] = [
  'token-bucket',
  'leaky-bucket',
  'sliding-window',
  'fixed-window',
  'warm-up',
]

/** Specs of `algorithm` with small numbers (so debts and full states come up), window in µs. */
function specOf(algorithm: Algo, window?: number): fc.Arbitrary<NormalizedRateSpec> {
  const windowUs = window === undefined ? fc.integer({ min: 6, max: 5000 }) : fc.constant(window)
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 12 }),
      capacity: fc.integer({ min: 1, max: 20 }),
      us: windowUs,
      slots: fc.integer({ min: 1, max: 6 }),
      warmUp: fc.integer({ min: 0, max: 8000 }),
    })
    .map(({ limit, capacity, us, slots, warmUp }) => {
      const spec: Record<string, unknown> = { algorithm, limit, window: us / 1000 }
      if (algorithm === 'token-bucket' || algorithm === 'warm-up') spec.capacity = capacity
      if (algorithm === 'sliding-window') spec.slots = slots
      if (algorithm === 'warm-up') spec.warmUp = warmUp / 1000
      return normalizeSpec(spec as RateLimiterSpec) as NormalizedRateSpec
    })
}

interface Step {
  readonly dt: number
  readonly op: 'take' | 'force' | 'refund'
  readonly cost: number
}

const steps = fc.array(
  fc.record({
    dt: fc.integer({ min: 0, max: 3000 }),
    op: fc.constantFrom<Step['op']>('take', 'take', 'force', 'refund'),
    cost: fc.integer({ min: 1, max: 14 }),
  }),
  { maxLength: 12 },
)

/** A kernel of `spec` with a history: returns it and the time (ms) after it. */
function played(spec: NormalizedRateSpec, history: readonly Step[]): [RateKernel, number] {
  const kernel = kernelOf(spec)
  let us = 0
  for (const step of history) {
    us += step.dt
    const now = us / 1000
    if (step.op === 'take') kernel.take(0, now, step.cost)
    else if (step.op === 'force') kernel.force(0, now, step.cost)
    else kernel.refund(0, now, step.cost)
  }
  return [kernel, us / 1000]
}

/** What a row decides from `now` on, sampled: equal signatures, equal decisions. */
function signature(kernel: RateKernel, now: number): number[] {
  const out: number[] = []
  for (const later of [0, 0.001, 0.5, 1.7, 3, 9]) {
    const at = now + later
    out.push(kernel.available(0, at), kernel.untilFresh(0, at))
    for (let cost = 0; cost <= kernel.capacity; cost++) out.push(kernel.wait(0, at, cost))
  }
  return out
}

const modes = fc.constantFrom<Carry>(...CARRY_MODES)

/** Checks `check` on a history under one spec of `algorithm`, carried to another at its end. */
function acrossSpecs(
  algorithm: Algo,
  check: (
    from: NormalizedRateSpec,
    to: NormalizedRateSpec,
    kernel: RateKernel,
    now: number,
    carry: Carry,
  ) => void,
): void {
  fc.assert(
    fc.property(specOf(algorithm), specOf(algorithm), steps, modes, (from, to, history, carry) => {
      const [kernel, now] = played(from, history)
      check(from, to, kernel, now, carry)
    }),
  )
}

describe('carry, for every algorithm', () => {
  describe.each(ALGOS)('%s', (algorithm) => {
    it('changes no decision when the spec is unchanged (reset aside)', () => {
      fc.assert(
        fc.property(specOf(algorithm), steps, modes, (spec, history, carry) => {
          fc.pre(carry !== 'reset')
          const [kernel, now] = played(spec, history)
          const copy = into(spec, now, kernel, carry)
          expect(signature(copy, now)).toEqual(signature(kernel, now))
        }),
      )
    })

    it('is idempotent: carrying the result again under the same spec changes nothing', () => {
      acrossSpecs(algorithm, (_from, to, kernel, now, carry) => {
        const once = into(to, now, kernel, carry)
        const twice = into(to, now, once, carry)
        expect(signature(twice, now)).toEqual(signature(once, now))
      })
    })

    it('depends on nothing but the old row, the specs and the time (not what the row held)', () => {
      fc.assert(
        fc.property(
          specOf(algorithm),
          specOf(algorithm),
          steps,
          steps,
          modes,
          (from, to, history, other, carry) => {
            const [a, now] = played(from, history)
            const [b] = played(from, history)
            const clean = into(to, now, a, carry)
            // Another process's kernel, whose row held another key's state.
            const [dirty] = played(to, other)
            dirty.carry(0, now, b, 0, carry)
            expect(rowOf(dirty)).toEqual(rowOf(clean))
          },
        ),
      )
    })

    it('never leaves more available than the mode allows, nor more than the new capacity', () => {
      acrossSpecs(algorithm, (_from, to, kernel, now, carry) => {
        const next = into(to, now, kernel, carry)
        const before = kernel.available(0, now)
        const after = next.available(0, now)
        const fresh = kernelOf(to, now)
        expect(after).toBeLessThanOrEqual(next.capacity)
        // A fresh (full) row stays fresh, a reset one is fresh; a warm-up row keeps its age.
        if (carry === 'reset' || kernel.untilFresh(0, now) === 0) {
          if (algorithm === 'warm-up') {
            expect(rowOf(next)[2]).toBe(rowOf(kernel)[2])
            expect(rowOf(next)[0]).toBe(Number.NEGATIVE_INFINITY)
          } else {
            expect(next.isFresh(0, now)).toBe(true)
            expect(after).toBe(fresh.available(0, now))
          }
          return
        }
        const inDebt = !kernel.fits(0, now, 0)
        const [oldCapacity, newCapacity] = [kernel.capacity, next.capacity]
        if (inDebt) {
          expect(after).toBe(0)
        } else if (carry === 'as-is') {
          expect(after).toBeLessThanOrEqual(Math.min(before, newCapacity))
          if (algorithm !== 'warm-up') expect(after).toBe(Math.min(before, newCapacity))
        } else if (carry === 'additive') {
          if (algorithm !== 'warm-up') {
            expect(after).toBe(Math.max(0, before + newCapacity - oldCapacity))
          }
        } else {
          expect(after).toBeGreaterThanOrEqual(
            Math.min(Math.floor((before * newCapacity) / oldCapacity), next.freshPermits),
          )
          expect(after).toBeLessThanOrEqual(Math.floor(((before + 1) * newCapacity) / oldCapacity))
          if (algorithm === 'sliding-window' || algorithm === 'fixed-window') {
            expect(after).toBe(Math.floor((before * newCapacity) / oldCapacity))
          }
        }
      })
    })
  })
})

describe('carry keeps a debt owed', () => {
  describe.each(ALGOS)('%s', (algorithm) => {
    it('pays it off at the same instant (windows: the same window length, to a slot)', () => {
      fc.assert(
        fc.property(
          fc
            .integer({ min: 6, max: 5000 })
            .chain((window) => fc.tuple(specOf(algorithm, window), specOf(algorithm, window))),
          steps,
          fc.constantFrom<Carry>('proportional', 'as-is', 'additive'),
          ([from, to], history, carry) => {
            const [kernel, now] = played(from, history)
            fc.pre(!kernel.fits(0, now, 0))
            const next = into(to, now, kernel, carry)
            const before = kernel.wait(0, now, 0)
            const after = next.wait(0, now, 0)
            // A cold warm-up bucket's budget is one (longer) interval: not comparable.
            if (algorithm === 'warm-up') return
            expect(after).toBeGreaterThan(0)
            // A count moves to the first new slot that leaves the window no earlier, or to
            // the current one when the new slots cannot hold it that long.
            let earliest = before
            let latest = before + 0.001
            if (algorithm === 'sliding-window') {
              const longest = rateKernel(to)
              longest.resize(1)
              longest.clear(0, now)
              longest.force(0, now, 2 * to.limit)
              earliest = Math.min(before, longest.wait(0, now, 0))
              latest = before + to.window / (to as { slots: number }).slots + 0.001
            }
            expect(after).toBeGreaterThanOrEqual(earliest - 0.001)
            // In every mode, additive too: the instant does not move.
            expect(after).toBeLessThanOrEqual(latest)
          },
        ),
      )
    })
  })
})

/**
 * A rolling deploy: processes on two specs take turns on one key, each carrying the state
 * over to its own spec when it finds the other's, with a greedy client. Admissions are
 * checked against the larger spec's own bound in every interval.
 */
describe('carry under a rolling deploy (two specs flipping)', () => {
  const flips = fc.array(
    fc.record({
      dt: fc.integer({ min: 0, max: 2500 }),
      flip: fc.boolean(),
      cost: fc.integer({ min: 1, max: 6 }),
    }),
    { minLength: 1, maxLength: 40 },
  )

  it('as-is does not hold it: a key flipping between 2 and 1 per window gets 4 where 3 is the bound', () => {
    // As-is keeps 0.47 permits while each costs twice the time, so the 1-per-window bucket is
    // full (fresh) early, and a fresh key is fresh under the other spec too.
    const specs = [
      normalizeSpec({ algorithm: 'token-bucket', limit: 2, window: 4.977 }),
      normalizeSpec({ algorithm: 'token-bucket', limit: 1, window: 4.977 }),
    ] as [NormalizedRateSpec, NormalizedRateSpec]
    const plan = [
      { dt: 0, flip: false, cost: 2 },
      { dt: 1166, flip: true, cost: 1 },
      { dt: 1024, flip: false, cost: 1 },
      { dt: 1621, flip: true, cost: 1 },
      { dt: 0, flip: false, cost: 1 },
    ]
    expect(admissions(specs, plan, 'as-is')).toEqual([0, 0, 3811, 3811])
    expect(admissions(specs, plan, 'proportional')).toEqual([0, 0, 3811])
  })

  function admissions(
    specs: readonly [NormalizedRateSpec, NormalizedRateSpec],
    plan: readonly { dt: number; flip: boolean; cost: number }[],
    carry: Carry,
  ): number[] {
    const kernels = specs.map((spec) => kernelOf(spec))
    let on = 0
    let us = 0
    const admitted: number[] = []
    for (const { dt, flip, cost } of plan) {
      us += dt
      if (flip) {
        kernels[1 - on]!.carry(0, us / 1000, kernels[on]!, 0, carry)
        on = 1 - on
      }
      const kernel = kernels[on]!
      const n = Math.min(cost, kernel.capacity)
      if (kernel.take(0, us / 1000, n)) for (let i = 0; i < n; i++) admitted.push(us)
    }
    return admitted
  }

  /** Two specs that differ in their limit only (buckets: capacity = limit). */
  const sameWindow = (algorithm: Algo) =>
    fc.integer({ min: 6, max: 5000 }).chain((window) =>
      fc.tuple(specOf(algorithm, window), specOf(algorithm, window)).map(([a, b]) => {
        const even = (spec: NormalizedRateSpec) =>
          'capacity' in spec ? { ...spec, capacity: spec.limit } : spec
        return [even(a), { ...even(b), ...('warmUp' in a ? { warmUp: a.warmUp } : {}) }] as [
          NormalizedRateSpec,
          NormalizedRateSpec,
        ]
      }),
    )

  describe.each(['sliding-window', 'fixed-window'] as const)('%s', (algorithm) => {
    it.each(['proportional', 'additive'] as const)(
      '%s never admits more than the larger limit in any window',
      (carry) => {
        fc.assert(
          fc.property(sameWindow(algorithm), flips, (specs, plan) => {
            const most = Math.max(specs[0].limit, specs[1].limit)
            const windowUs = Math.round(specs[0].window * 1000)
            const admitted = admissions(specs, plan, carry)
            for (let i = 0; i < admitted.length; i++) {
              const start = admitted[i]!
              const end =
                algorithm === 'fixed-window'
                  ? (Math.floor(start / windowUs) + 1) * windowUs
                  : start + windowUs
              const within = admitted.filter((at) => at >= start && at < end).length
              expect(within).toBeLessThanOrEqual(most)
            }
          }),
        )
      },
    )
  })

  describe.each(['token-bucket', 'leaky-bucket', 'warm-up'] as const)('%s', (algorithm) => {
    it.each(['proportional', 'additive'] as const)(
      '%s never admits more than the larger bucket allows: capacity + rate × time',
      (carry) => {
        fc.assert(
          fc.property(sameWindow(algorithm), flips, (specs, plan) => {
            const capacity = Math.max(...specs.map((s) => rateKernel(s).capacity))
            const limit = Math.max(specs[0].limit, specs[1].limit)
            const windowUs = Math.round(specs[0].window * 1000)
            const admitted = admissions(specs, plan, carry)
            for (let i = 0; i < admitted.length; i++) {
              for (let j = i; j < admitted.length; j++) {
                const span = admitted[j]! - admitted[i]!
                expect(j - i + 1).toBeLessThanOrEqual(
                  capacity + Math.floor((span * limit) / windowUs),
                )
              }
            }
          }),
        )
      },
    )
  })
})
