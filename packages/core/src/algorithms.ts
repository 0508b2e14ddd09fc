import type { AlgorithmDefinition } from './algorithm'
import { concurrencyAlgorithm } from './concurrency/concurrency'
import { fixedWindowAlgorithm } from './fixed-window/fixed-window'
import type { RateKernel } from './kernel'
import { leakyBucketAlgorithm } from './leaky-bucket/leaky-bucket'
import { slidingWindowAlgorithm } from './sliding-window/sliding-window'
import { tokenBucketAlgorithm } from './token-bucket/token-bucket'
import type {
  Algorithm,
  LimiterSpec,
  NormalizedRateSpec,
  NormalizedSpec,
  RateAlgorithm,
} from './types'
import { describe, readOptions, typeError } from './validation'
import { warmUpAlgorithm } from './warm-up/warm-up-token-bucket'

/** Every algorithm, by name: the one place the list of algorithms lives. */
const REGISTRY: {
  readonly [A in Algorithm]: AlgorithmDefinition<Extract<NormalizedSpec, { algorithm: A }>>
} = {
  'token-bucket': tokenBucketAlgorithm,
  'leaky-bucket': leakyBucketAlgorithm,
  'sliding-window': slidingWindowAlgorithm,
  'fixed-window': fixedWindowAlgorithm,
  'warm-up': warmUpAlgorithm,
  concurrency: concurrencyAlgorithm,
}

/**
 * Every `algorithm` a {@link LimiterSpec} may name, in a stable order.
 *
 * @example
 * ```ts
 * ALGORITHMS.includes(spec.algorithm) // validate a spec read from config
 * ```
 */
export const ALGORITHMS: readonly Algorithm[] = Object.keys(REGISTRY) as Algorithm[]

/** The time-based algorithms: those whose limiters are `RateLimiter`s. */
export const RATE_ALGORITHMS: readonly RateAlgorithm[] = ALGORITHMS.filter(
  (a): a is RateAlgorithm => REGISTRY[a].timed,
)

/**
 * The registry entry of `algorithm`, or a TypeError naming the option and the choices.
 *
 * @example
 * ```ts
 * algorithmDefinition('token-bucket').options // ['limit', 'window', 'capacity']
 * ```
 */
export function algorithmDefinition(
  algorithm: unknown,
  label = 'createLimiter',
  option = 'algorithm',
  choices: readonly Algorithm[] = ALGORITHMS,
): AlgorithmDefinition {
  if (typeof algorithm !== 'string' || !choices.includes(algorithm as Algorithm)) {
    throw typeError(
      label,
      option,
      `must be one of ${choices.map((a) => `'${a}'`).join(', ')}`,
      algorithm,
    )
  }
  return REGISTRY[algorithm as Algorithm] as AlgorithmDefinition
}

/**
 * Validates a spec and returns it normalized: durations in milliseconds, every default
 * filled in, no `name` or `clock`. Equal limiters give equal normalized specs, so a
 * store can compare or key policies by value. Unknown options are refused; messages name
 * `label` and `prefix` (default: the algorithm's own factory, as `createLimiter` does).
 *
 * @example
 * ```ts
 * normalizeSpec({ algorithm: 'token-bucket', limit: 10, window: '1s' })
 * // { algorithm: 'token-bucket', limit: 10, window: 1000, capacity: 10 }
 * ```
 */
export function normalizeSpec(spec: LimiterSpec, label?: string, prefix = ''): NormalizedSpec {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new TypeError(
      `${label ?? 'createLimiter'}: spec must be an object, got ${describe(spec)}`,
    )
  }
  // Own properties only: a polluted Object.prototype must not pick an algorithm or a size.
  const algorithm = Object.hasOwn(spec, 'algorithm') ? spec.algorithm : undefined
  const definition = algorithmDefinition(algorithm, label, `${prefix}algorithm`)
  const factory = label ?? definition.factory
  const known = [...definition.options, 'algorithm', 'name', 'clock']
  const own = readOptions(factory, spec, known)
  return definition.normalize(own as Readonly<Record<string, unknown>>, factory, prefix)
}

/**
 * The kernel of a normalized time-based spec: its algorithm's decisions on rows of
 * per-key state, as every store and limiter runs them.
 *
 * @example
 * ```ts
 * const kernel = rateKernel(normalizeSpec({ algorithm: 'fixed-window', limit: 100, window: '1m' }))
 * kernel.resize(1024)
 * ```
 */
export function rateKernel(spec: NormalizedRateSpec): RateKernel {
  const make = (REGISTRY[spec.algorithm] as AlgorithmDefinition).kernel
  if (make === undefined) throw new TypeError(`rateKernel: "${spec.algorithm}" has no time axis`)
  return make(spec as never)
}
