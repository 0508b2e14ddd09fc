import {
  createLimiter,
  type Duration,
  type LimiterSpec,
  parseDuration,
  type RateLimiterSpec,
} from '@sluice/core'
import type { Policy } from './store'
import { describe, positiveInteger, rangeError, typeError } from './validate'

/** The time-based algorithms a rate-limit policy may use. */
export type RateAlgorithm = RateLimiterSpec['algorithm']

const ALGORITHMS: readonly RateAlgorithm[] = [
  'sliding-window',
  'token-bucket',
  'leaky-bucket',
  'fixed-window',
  'warm-up',
]

/** The options each algorithm takes beyond `limit` and `window`. */
const EXTRA_OPTIONS: Record<RateAlgorithm, readonly ('capacity' | 'slots' | 'warmUp')[]> = {
  'sliding-window': ['slots'],
  'token-bucket': ['capacity'],
  'leaky-bucket': [],
  'fixed-window': [],
  'warm-up': ['capacity', 'warmUp'],
}

/**
 * One time-based limit, as written in middleware options (top level, or one entry of
 * `policies`). Durations may be strings; they are turned into milliseconds at construction.
 *
 * @example
 * ```ts
 * const burst: PolicyOptions = { name: 'burst', algorithm: 'token-bucket', limit: 10, window: '1s', capacity: 20 }
 * ```
 */
export interface PolicyOptions {
  /** Default `'sliding-window'`. */
  algorithm?: RateAlgorithm
  /** Requests (permits) per window. Default 100. */
  limit?: number
  /** Default `'1m'`. */
  window?: Duration
  /** Largest burst (`token-bucket`, `warm-up`). Default: `limit`. */
  capacity?: number
  /** Buckets the window is cut into (`sliding-window`). Default 10. */
  slots?: number
  /** Time from creation for the rate to climb from a third to all of `limit` (`warm-up`, required). */
  warmUp?: Duration
  /** Shown in headers and namespaces state in the store. Default `'default'`. */
  name?: string
}

/** Middleware options that describe policies: one at the top level, or a list. */
export interface PoliciesOptions extends PolicyOptions {
  /** Several limits checked together, atomically; give each a unique `name`. */
  policies?: readonly PolicyOptions[]
}

const POLICY_KEYS = ['algorithm', 'limit', 'window', 'capacity', 'slots', 'warmUp'] as const

export const DEFAULT_LIMIT = 100
export const DEFAULT_WINDOW: Duration = '1m'
export const DEFAULT_NAME = 'default'

/**
 * Checks a policy name: it is written into headers as a structured-field string, so it
 * must be printable ASCII.
 */
export function policyName(factory: string, option: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw typeError(factory, option, 'must be a non-empty string', value)
  }
  if (!/^[\x20-\x7e]+$/.test(value)) {
    throw rangeError(factory, option, 'must be printable ASCII (it is sent in headers)', value)
  }
  return value
}

/**
 * Turns middleware options into validated policies: defaults applied (`sliding-window`,
 * 100 per minute, name `'default'`), durations converted to milliseconds, options that
 * do not belong to the algorithm refused. Every error names the factory and the option.
 *
 * @example
 * ```ts
 * compilePolicies({ limit: 10, window: '1s' }, 'rateLimit')
 * // [{ name: 'default', spec: { algorithm: 'sliding-window', limit: 10, window: 1000 }, limit: 10, windowMs: 1000 }]
 * ```
 */
export function compilePolicies(options: PoliciesOptions, factory: string): Policy[] {
  const { policies } = options
  if (policies === undefined) {
    return [compilePolicy(options, factory, '', options.name ?? DEFAULT_NAME)]
  }
  if (!Array.isArray(policies) || policies.length === 0) {
    throw typeError(factory, 'policies', 'must be a non-empty array', policies)
  }
  for (const key of POLICY_KEYS) {
    if (options[key] !== undefined) {
      throw new TypeError(
        `${factory}: "${key}" cannot be combined with "policies" (give it inside each policy), got ${describe(options[key])}`,
      )
    }
  }
  const compiled = policies.map((entry, i) => {
    const prefix = `policies[${i}].`
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw typeError(factory, `policies[${i}]`, 'must be an object', entry)
    }
    if (entry.name === undefined && policies.length > 1) {
      throw new TypeError(
        `${factory}: "${prefix}name" is required when there are several policies, got undefined`,
      )
    }
    return compilePolicy(entry, factory, prefix, entry.name ?? options.name ?? DEFAULT_NAME)
  })
  const seen = new Set<string>()
  compiled.forEach((policy, i) => {
    if (seen.has(policy.name)) {
      throw new TypeError(`${factory}: "policies[${i}].name" must be unique, got "${policy.name}"`)
    }
    seen.add(policy.name)
  })
  return compiled
}

function compilePolicy(
  options: PolicyOptions,
  factory: string,
  prefix: string,
  name: unknown,
): Policy {
  const { algorithm = 'sliding-window' } = options
  if (!ALGORITHMS.includes(algorithm)) {
    throw typeError(
      factory,
      `${prefix}algorithm`,
      `must be one of ${ALGORITHMS.map((a) => `'${a}'`).join(', ')}`,
      algorithm,
    )
  }
  const checkedName = policyName(factory, `${prefix}name`, name)
  const limit = positiveInteger(factory, `${prefix}limit`, options.limit ?? DEFAULT_LIMIT)
  const windowMs = positiveDuration(factory, `${prefix}window`, options.window ?? DEFAULT_WINDOW)
  const allowed = EXTRA_OPTIONS[algorithm]
  for (const extra of ['capacity', 'slots', 'warmUp'] as const) {
    if (options[extra] !== undefined && !allowed.includes(extra)) {
      throw new TypeError(
        `${factory}: "${prefix}${extra}" does not apply to algorithm '${algorithm}', got ${describe(options[extra])}`,
      )
    }
  }
  const spec: Record<string, unknown> = { algorithm, name: checkedName, limit, window: windowMs }
  if (options.capacity !== undefined) {
    spec.capacity = positiveInteger(factory, `${prefix}capacity`, options.capacity)
  }
  if (options.slots !== undefined) {
    spec.slots = positiveInteger(factory, `${prefix}slots`, options.slots)
  }
  if (algorithm === 'warm-up') {
    if (options.warmUp === undefined) {
      throw new TypeError(
        `${factory}: "${prefix}warmUp" is required by algorithm 'warm-up', got undefined`,
      )
    }
    spec.warmUp = positiveDuration(factory, `${prefix}warmUp`, options.warmUp)
  }
  const limiterSpec = spec as LimiterSpec
  // The core factory has the last word on anything the checks above do not cover
  // (a capacity its math cannot hold, say); its message names the core factory.
  createLimiter(limiterSpec)
  return { name: checkedName, spec: limiterSpec, limit, windowMs }
}

function positiveDuration(factory: string, option: string, value: unknown): number {
  const ms = parseDuration(value as Duration, `${factory}: "${option}"`)
  if (ms === 0) throw rangeError(factory, option, 'must be a positive duration', value)
  return ms
}

/**
 * The single concurrency policy of a bulkhead.
 *
 * @example
 * ```ts
 * concurrencyPolicy('bulkhead', 20) // { name: 'bulkhead', spec: { algorithm: 'concurrency', name: 'bulkhead', max: 20 }, limit: 20, windowMs: 0 }
 * ```
 */
export function concurrencyPolicy(name: string, max: number): Policy {
  return { name, spec: { algorithm: 'concurrency', name, max }, limit: max, windowMs: 0 }
}
