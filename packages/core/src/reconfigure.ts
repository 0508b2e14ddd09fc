import type { AlgorithmDefinition } from './algorithm'
import { readCarry } from './carry'
import type { RateKernel } from './kernel'
import type { Carry, Clock, NormalizedRateSpec, NormalizedSpec } from './types'
import { describe, readOptions } from './validation'

/** A validated `reconfigure` call: the new spec, normalized, and how the state carries over. */
export interface Reconfiguration<S extends NormalizedSpec> {
  readonly spec: S
  readonly carry: Carry
}

/**
 * Validates a limiter's `reconfigure(spec, options)` before anything changes, so a refused
 * call leaves the old spec working. The spec is whole (options left out take their
 * defaults, never the current values) and of the limiter's own algorithm; `algorithm` may
 * be left out, and `name` and `clock` may be given only as they are (a spec written for
 * `createLimiter` can be passed again); `extra` names options the caller reads itself.
 * Messages name `${factory}.reconfigure`.
 *
 * @example
 * ```ts
 * const { spec, carry } = readReconfigure(tokenBucketAlgorithm, 'api', clock, { limit: 20 }, { carry: 'as-is' })
 * ```
 */
export function readReconfigure<S extends NormalizedSpec>(
  definition: AlgorithmDefinition<S>,
  name: string,
  clock: Clock,
  spec: unknown,
  options: unknown,
  extra: readonly string[] = [],
): Reconfiguration<S> {
  const method = `${definition.factory}.reconfigure`
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new TypeError(`${method}: spec must be an object, got ${describe(spec)}`)
  }
  const given = readOptions(method, spec, [
    ...definition.options,
    ...extra,
    'algorithm',
    'name',
    'clock',
  ]) as Readonly<Record<string, unknown>>
  if (given.algorithm !== undefined && given.algorithm !== definition.algorithm) {
    throw new TypeError(
      `${method}: "algorithm" must be '${definition.algorithm}', got ${describe(given.algorithm)} (a limiter keeps its algorithm: build a new one to change it)`,
    )
  }
  if (given.name !== undefined && given.name !== name) {
    throw new TypeError(
      `${method}: "name" cannot change (it is ${describe(name)}), got ${describe(given.name)}`,
    )
  }
  if (given.clock !== undefined && given.clock !== clock) {
    throw new TypeError(`${method}: "clock" cannot change; pass the limiter's own or none`)
  }
  const normalized = definition.normalize(given, method)
  return { spec: normalized, carry: readCarry(method, options) }
}

/**
 * A time-based limiter's `reconfigure`, up to swapping the kernel in: validates the call
 * (as {@link readReconfigure}), makes the new spec's kernel and carries the limiter's one
 * row over into it at the clock's time.
 *
 * @example
 * ```ts
 * const next = reconfigureKernel(this.#definition, this.name, this.#clock, this.#kernel, spec, options)
 * this.#kernel = next.kernel
 * ```
 */
export function reconfigureKernel<S extends NormalizedRateSpec, K extends RateKernel>(
  definition: AlgorithmDefinition<S>,
  name: string,
  clock: Clock,
  from: K,
  spec: unknown,
  options: unknown,
): Reconfiguration<S> & { readonly kernel: K } {
  const next = readReconfigure(definition, name, clock, spec, options)
  const kernel = (definition.kernel as (spec: S) => K)(next.spec)
  kernel.resize(1)
  kernel.carry(0, clock.now(), from, 0, next.carry)
  return { ...next, kernel }
}
