import { algorithmDefinition, normalizeSpec } from './algorithms'
import type {
  Clock,
  ConcurrencyLimiter,
  LimiterSpec,
  NormalizedRateSpec,
  NormalizedSpec,
  RateLimiter,
  RateLimiterSpec,
} from './types'
import { readClock, readName } from './validation'

/**
 * Builds any of the six limiters from a plain spec, validating its options exactly as
 * the factory does. The spec is what the HTTP layer and the stores share; `clock`
 * (default `systemClock`) overrides any clock in the spec.
 *
 * @example
 * ```ts
 * const limiter = createLimiter({ algorithm: 'sliding-window', limit: 100, window: '1m' })
 * const bulkhead = createLimiter({ algorithm: 'concurrency', max: 20 }, new ManualClock())
 * ```
 */
export function createLimiter(
  spec: Extract<LimiterSpec | NormalizedSpec, { algorithm: 'concurrency' }>,
  clock?: Clock,
): ConcurrencyLimiter
export function createLimiter(
  spec: RateLimiterSpec | NormalizedRateSpec,
  clock?: Clock,
): RateLimiter
export function createLimiter(
  spec: LimiterSpec | NormalizedSpec,
  clock?: Clock,
): RateLimiter | ConcurrencyLimiter
export function createLimiter(
  spec: LimiterSpec | NormalizedSpec,
  clock?: Clock,
): RateLimiter | ConcurrencyLimiter {
  const normalized = normalizeSpec(spec as LimiterSpec)
  const definition = algorithmDefinition(normalized.algorithm)
  const { name, clock: own } = spec as { name?: unknown; clock?: unknown }
  return definition.create(
    normalized,
    readName(definition.factory, 'name', name, normalized.algorithm),
    clock ?? readClock(definition.factory, 'clock', own),
  )
}
