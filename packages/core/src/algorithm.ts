import { formatDuration } from './duration'
import type { RateKernel } from './kernel'
import type {
  Clock,
  ConcurrencyLimiter,
  NormalizedRateSpec,
  NormalizedSpec,
  RateLimiter,
} from './types'
import { readClock, readName, readOptions } from './validation'

/**
 * How one algorithm is described, validated and built: the entry the registry in
 * `algorithms.ts` keeps for each of the six. Adding an algorithm means one such entry (in
 * the algorithm's own file) and a line in the registry.
 */
export interface AlgorithmDefinition<S extends NormalizedSpec = NormalizedSpec> {
  readonly algorithm: S['algorithm']
  /** The factory users call (`tokenBucket`): what validation messages name by default. */
  readonly factory: string
  /** Whether the limiter has a time axis (a `RateLimiter`) or counts permits in flight. */
  readonly timed: boolean
  /** The spec options it reads, besides `algorithm`, `name` and `clock`. */
  readonly options: readonly string[]
  /**
   * Validates options and fills in defaults. Messages read `${label}: "${prefix}option"`,
   * so a caller validating one entry of a list names it (`rateLimit: "policies[1].limit"`).
   * Unknown names are the caller's to check: it knows which others are legal there.
   */
  normalize(options: Readonly<Record<string, unknown>>, label: string, prefix?: string): S
  /**
   * The kernel of a time-based algorithm: its decisions on per-key rows, which its
   * limiter, every store and every lease run (the Redis scripts are ports of it).
   */
  readonly kernel?: (spec: S & NormalizedRateSpec) => RateKernel
  /** Builds the limiter from a normalized spec. */
  create(spec: S, name: string, clock: Clock): RateLimiter | ConcurrencyLimiter
  /**
   * The name an unnamed policy of this spec gets (before a penalty's part): ERL-style
   * `100-per-1m` (see {@link perWindow}), plus whatever sets it apart from another
   * algorithm's or another spec's (`-fixed-window`, `-burst-20`), so that two unnamed
   * policies that count differently never share a name.
   */
  defaultName(spec: S): string
}

/**
 * `limit`-per-`window`, the start of every time-based algorithm's default name.
 *
 * @example
 * ```ts
 * perWindow({ limit: 100, window: 60_000 }) // '100-per-1m'
 * ```
 */
export function perWindow(spec: { readonly limit: number; readonly window: number }): string {
  return `${spec.limit}-per-${formatDuration(spec.window)}`
}

/** `-burst-<capacity>` when a bucket's capacity is not its limit, else nothing. */
export function burst(spec: { readonly limit: number; readonly capacity: number }): string {
  return spec.capacity === spec.limit ? '' : `-burst-${spec.capacity}`
}

/**
 * What every factory does with its options: refuse unknown names (each algorithm's own
 * plus `name` and `clock`), normalize, and build with the given name and clock.
 */
export function buildLimiter<S extends NormalizedSpec>(
  definition: AlgorithmDefinition<S>,
  options: object,
): RateLimiter | ConcurrencyLimiter {
  const { factory } = definition
  const given = readOptions(factory, options, [...definition.options, 'name', 'clock']) as Readonly<
    Record<string, unknown>
  >
  return definition.create(
    definition.normalize(given, factory),
    readName(factory, 'name', given.name, definition.algorithm),
    readClock(factory, 'clock', given.clock),
  )
}
