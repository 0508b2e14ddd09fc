import { type Duration, parseDuration } from '@sluice/core'
import type { Policy } from '@sluice/http'

/** Script arguments per policy: a kind letter and five integers (see script.ts). */
export type EncodedPolicy = readonly [kind: string, ...numbers: string[]]

const MAX_EXACT = Number.MAX_SAFE_INTEGER
// GCRA time units, finest first: the script keeps capacity × window (in units) as an exact
// integer in a double, so a huge configuration (a million per day) counts in coarser units.
const UNITS_US = [1, 10, 100, 1000]

/**
 * Encodes a policy for the script: durations in integer microseconds, defaults applied.
 * Throws a `RangeError` for a policy whose numbers the script could not keep exact.
 *
 * @example
 * encodePolicy(policy, 60_000_000) // ['g', '100', '60000000', '100', '0', '1'] for 100 per minute
 */
export function encodePolicy(policy: Policy, leaseTtlUs: number): EncodedPolicy {
  const { spec } = policy
  switch (spec.algorithm) {
    case 'token-bucket':
      return gcra(policy, spec.capacity ?? policy.limit, 0)
    case 'leaky-bucket':
      return gcra(policy, 1, 0)
    case 'warm-up':
      return gcra(policy, spec.capacity ?? policy.limit, micros(spec.warmUp, policy, 'warmUp'))
    case 'fixed-window':
      return ['f', String(policy.limit), String(windowMicros(policy)), '0', '0', '0']
    case 'sliding-window':
      return [
        's',
        String(policy.limit),
        String(windowMicros(policy)),
        String(spec.slots ?? 10),
        '0',
        '0',
      ]
    case 'concurrency':
      return ['c', String(spec.max), String(leaseTtlUs), '0', '0', '0']
    default:
      throw new TypeError(
        `redisStore: policy "${policy.name}" has an unknown algorithm ${JSON.stringify((spec as { algorithm: unknown }).algorithm)}`,
      )
  }
}

function gcra(policy: Policy, capacity: number, warmUpUs: number): EncodedPolicy {
  const windowUs = windowMicros(policy)
  const largest = Math.max(capacity, policy.limit, 3)
  const unit = UNITS_US.find((u) => windowUs % u === 0 && largest * (windowUs / u) <= MAX_EXACT)
  if (unit === undefined) {
    throw new RangeError(
      `redisStore: policy "${policy.name}" is too large to count exactly: ${largest} × window must be at most 2^53 µs (a window of whole milliseconds allows about 10^8 per day), got ${largest} per ${policy.windowMs} ms`,
    )
  }
  const windowUnits = windowUs / unit
  return [
    'g',
    String(policy.limit),
    String(windowUnits),
    String(capacity),
    String(warmUpUs),
    String(unit),
  ]
}

function windowMicros(policy: Policy): number {
  const us = Math.round(policy.windowMs * 1000)
  if (!(us >= 1)) {
    throw new RangeError(
      `redisStore: policy "${policy.name}" needs a window of at least 1 µs, got ${policy.windowMs} ms`,
    )
  }
  return us
}

function micros(value: Duration, policy: Policy, option: string): number {
  return Math.round(parseDuration(value, `redisStore: policy "${policy.name}" "${option}"`) * 1000)
}
