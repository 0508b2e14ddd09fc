import { type AdaptiveAlgorithm, adaptiveConcurrency, concurrency } from '@sluice/core'
import { seededRandom } from './random'
import type { Contender } from './simulate'

function fixed(id: string, label: string, times: number): Contender {
  return {
    id,
    label,
    gate: (clock, scenario) => {
      const limiter = concurrency({ max: Math.max(1, Math.round(times * scenario.workers)), clock })
      return {
        tryEnter: () => limiter.tryEnter(),
        get limit() {
          return limiter.max
        },
      }
    },
  }
}

function adaptive(algorithm: AdaptiveAlgorithm): Contender {
  return {
    id: algorithm,
    label: `adaptive: ${algorithm}`,
    // Defaults only: the clock and a seeded jitter source are the simulation's, nothing is tuned.
    gate: (clock, scenario) =>
      adaptiveConcurrency({ algorithm, clock, random: seededRandom(scenario.seed + 1) }),
  }
}

/** AIMD as Netflix ships it, blind to latency: it learns of overload only from timeouts. */
const dropsOnlyAimd: Contender = {
  id: 'aimd-drops-only',
  label: 'adaptive: aimd, drops only (`tolerance: Infinity`)',
  gate: (clock, scenario) =>
    adaptiveConcurrency({
      algorithm: 'aimd',
      tolerance: Number.POSITIVE_INFINITY,
      clock,
      random: seededRandom(scenario.seed + 1),
    }),
}

/** Every contender of the simulation, in the order of the report. */
export const ADAPTIVE_CONTENDERS: readonly Contender[] = [
  { id: 'none', label: 'no limit', gate: () => undefined },
  fixed('fixed-low', 'fixed, too low (C/2)', 0.5),
  fixed('fixed-right', 'fixed, right (C)', 1),
  fixed('fixed-high', 'fixed, 10× too high (10C)', 10),
  adaptive('gradient2'),
  adaptive('vegas'),
  adaptive('aimd'),
  dropsOnlyAimd,
]

/** The contenders the targets are about: every algorithm at its defaults. */
export const ALGORITHM_IDS = ['gradient2', 'vegas', 'aimd'] as const
