import {
  type Carry,
  type Duration,
  type NormalizedSpec,
  normalizeSpec,
  RATE_ALGORITHMS,
  type RateAlgorithm,
} from '@sluice/core'
import { algorithmDefinition, formatDuration } from '@sluice/core/internal'
import {
  MAX_NAME_LENGTH,
  rangeError,
  readOptions,
  readPositiveDuration,
  readPositiveInteger,
  typeError,
} from '@sluice/core/validation'
import type { Penalty, Policy, Store } from './store'
import { warnIfBareMilliseconds } from './warnings'

/** The time-based algorithms a rate-limit policy may use: core's, every one with a time axis. */
export type { RateAlgorithm }

/**
 * A penalty for keys that keep being refused: a key refused `after` times (default 1)
 * within the refusing policy's window is refused for `for`, whatever its budget says.
 * The refusal that starts the block already reports it; requests during a block neither
 * count nor extend it.
 *
 * @example
 * ```ts
 * const penalty: BlockOptions = { for: '15m', after: 3 }
 * ```
 */
export interface BlockOptions {
  /** How long a block lasts. */
  for: Duration
  /** Refusals within the policy's window that start a block. Default 1. */
  after?: number
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
  /** Block keys that keep being refused. */
  block?: BlockOptions
  /**
   * Shown in headers and keys the policy's state in a store: a changed spec under the same
   * name carries the state over (see `reconfigure`). Default: made from the spec, e.g.
   * `'100-per-1m'`, so unnamed policies that differ are told apart (and never share state).
   */
  name?: string
}

/** The option names of one policy. */
export const POLICY_OPTIONS: readonly string[] = [
  'algorithm',
  'limit',
  'window',
  'capacity',
  'slots',
  'warmUp',
  'block',
  'name',
]

/**
 * Refuses single-policy options (`limit`, `window`, ...) given beside `policies`: each
 * belongs inside its policy there.
 *
 * @example
 * ```ts
 * refuseBesidePolicies('rateLimit', { policies: [], limit: 5 }) // TypeError naming "limit"
 * ```
 */
export function refuseBesidePolicies(factory: string, options: object): void {
  for (const key of POLICY_OPTIONS) {
    const value = (options as Record<string, unknown>)[key]
    if (value !== undefined) {
      throw typeError(
        factory,
        key,
        'cannot be combined with "policies" (give it inside each policy)',
        value,
      )
    }
  }
}

/** What `rateLimit()` uses when an option is left out. */
export const DEFAULT_LIMIT = 100
export const DEFAULT_WINDOW: Duration = '1m'
export const DEFAULT_ALGORITHM: RateAlgorithm = 'sliding-window'

export { formatDuration }

/**
 * Checks a policy name: it is written into headers as a structured-field string, so it
 * must be printable ASCII, and short enough not to bloat every response.
 */
export function policyName(factory: string, option: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw typeError(factory, option, 'must be a non-empty string', value)
  }
  if (value.length > MAX_NAME_LENGTH) {
    throw rangeError(factory, option, `must be at most ${MAX_NAME_LENGTH} characters`, value)
  }
  if (!/^[\x20-\x7e]+$/.test(value)) {
    throw rangeError(factory, option, 'must be printable ASCII (it is sent in headers)', value)
  }
  return value
}

/**
 * The part of a policy's id that says what it counts: the algorithm and every number of
 * its normalized spec, in the registry's order, then the penalty. Equal for equal policies
 * in any process, different for any two that count differently.
 */
function specKey(spec: NormalizedSpec, block: Penalty | undefined): string {
  const values = algorithmDefinition(spec.algorithm).options.map(
    (option) => (spec as unknown as Record<string, number>)[option],
  )
  const penalty = block === undefined ? '' : `:block:${block.forMs}:${block.after}`
  return `${spec.algorithm}:${values.join(':')}${penalty}`
}

/**
 * The name an unnamed policy gets: ERL-style `100-per-1m`, plus whatever else sets it
 * apart from another unnamed policy (`-fixed-window`, `-burst-20`, `-block-5m`), so two
 * unnamed policies that count differently never share a name.
 *
 * @example
 * ```ts
 * defaultName({ algorithm: 'sliding-window', limit: 100, window: 60_000, slots: 10 }, undefined) // '100-per-1m'
 * ```
 */
export function defaultName(spec: NormalizedSpec, block: Penalty | undefined): string {
  const definition = algorithmDefinition(spec.algorithm)
  let name = definition.defaultName(spec)
  if (block !== undefined && definition.timed) {
    name += `-block-${formatDuration(block.forMs)}${block.after === 1 ? '' : `-after-${block.after}`}`
  }
  return name
}

/**
 * Makes a policy from a normalized spec: its name (given, or {@link defaultName}), its id
 * and the numbers headers show.
 */
export function makePolicy(
  spec: NormalizedSpec,
  name: string | undefined,
  block?: Penalty,
  carry?: Carry,
): Policy {
  const shown = name ?? defaultName(spec, block)
  const timed = spec.algorithm !== 'concurrency'
  const fingerprint = specKey(spec, block)
  return {
    name: shown,
    spec,
    id: `${shown}|${fingerprint}`,
    state: `${shown}|${spec.algorithm}`,
    fingerprint,
    carry,
    limit: timed ? spec.limit : spec.max,
    windowMs: timed ? spec.window : 0,
    block,
  }
}

/**
 * The policy with another carry mode: what a reconfiguration hands the store, so the state
 * written under the old spec carries over as the caller asked.
 *
 * @example
 * ```ts
 * withCarry(policy, 'as-is').carry // 'as-is'
 * ```
 */
export function withCarry(policy: Policy, carry: Carry): Policy {
  if ((policy.carry ?? 'proportional') === carry) return policy
  return makePolicy(policy.spec, policy.name, policy.block, carry)
}

function readBlock(factory: string, prefix: string, value: unknown): Penalty | undefined {
  if (value === undefined) return undefined
  const option = `${prefix}block`
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw typeError(factory, option, 'must be an object { for, after }', value)
  }
  const block = readOptions(`${factory}: "${option}"`, value, ['for', 'after']) as {
    for?: unknown
    after?: unknown
  }
  if (block.for === undefined) throw typeError(factory, `${option}.for`, 'is required', undefined)
  warnIfBareMilliseconds(factory, `${option}.for`, block.for)
  return {
    forMs: readPositiveDuration(factory, `${option}.for`, block.for),
    after:
      block.after === undefined ? 1 : readPositiveInteger(factory, `${option}.after`, block.after),
  }
}

/**
 * Validates one policy's options (unknown names refused, defaults applied: sliding window,
 * 100 per minute) and makes the policy. `prefix` names an entry of a list in messages
 * (`policies[1].`).
 *
 * @example
 * ```ts
 * compilePolicy({ limit: 10, window: '1s' }, 'rateLimit') // name '10-per-1s', windowMs 1000
 * ```
 */
export function compilePolicy(given: PolicyOptions, factory: string, prefix = ''): Policy {
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw typeError(
      factory,
      prefix === '' ? 'options' : prefix.slice(0, -1),
      'must be an object',
      given,
    )
  }
  // Own properties only, so a polluted Object.prototype cannot set a capacity or a block.
  // A middleware's top-level options hold more than a policy's: its engine checked the names.
  const options: PolicyOptions =
    prefix === ''
      ? Object.assign(Object.create(null) as PolicyOptions, given)
      : readOptions(factory, given, POLICY_OPTIONS)
  const algorithm = options.algorithm ?? DEFAULT_ALGORITHM
  const definition = algorithmDefinition(algorithm, factory, `${prefix}algorithm`, RATE_ALGORITHMS)
  for (const extra of ['capacity', 'slots', 'warmUp'] as const) {
    if (options[extra] !== undefined && !definition.options.includes(extra)) {
      throw rangeError(
        factory,
        `${prefix}${extra}`,
        `does not apply to algorithm '${algorithm}'`,
        options[extra],
      )
    }
  }
  // normalizeSpec warns about a bare `window` or `warmUp` under 1000, as every core factory does.
  const spec = normalizeSpec(
    {
      ...(definition.options.includes('capacity') && { capacity: options.capacity }),
      ...(definition.options.includes('slots') && { slots: options.slots }),
      ...(definition.options.includes('warmUp') && { warmUp: options.warmUp }),
      algorithm,
      // Only `undefined` means "the default": a null limit is a mistake, not 100.
      limit: options.limit === undefined ? DEFAULT_LIMIT : options.limit,
      window: options.window === undefined ? DEFAULT_WINDOW : options.window,
    } as never,
    factory,
    prefix,
  )
  const name =
    options.name === undefined ? undefined : policyName(factory, `${prefix}name`, options.name)
  return makePolicy(spec, name, readBlock(factory, prefix, options.block))
}

/**
 * Turns a list of policy options into policies, refusing two that end up with one name
 * (two unnamed policies that count alike would be one policy twice).
 */
export function compilePolicyList(
  list: readonly PolicyOptions[],
  factory: string,
  option = 'policies',
): Policy[] {
  if (!Array.isArray(list) || list.length === 0) {
    throw typeError(factory, option, 'must be a non-empty array', list)
  }
  const compiled = list.map((entry, i) => compilePolicy(entry, factory, `${option}[${i}].`))
  const seen = new Set<string>()
  compiled.forEach((policy, i) => {
    if (seen.has(policy.name)) {
      throw new TypeError(
        `${factory}: "${option}[${i}].name" must be unique among the policies, got "${policy.name}"`,
      )
    }
    seen.add(policy.name)
  })
  return compiled
}

/**
 * The single concurrency policy of a bulkhead, named `name` or, by default, after its
 * size (`'20-concurrent'`).
 *
 * @example
 * ```ts
 * concurrencyPolicy(undefined, 20).name // '20-concurrent'
 * ```
 */
export function concurrencyPolicy(name: string | undefined, max: number): Policy {
  return makePolicy({ algorithm: 'concurrency', max, maxQueue: 0 }, name)
}

/** How a policy reads in an error message: `"api" (sliding-window 100 per 1m)`. */
function describePolicy(policy: Policy): string {
  const { spec } = policy
  const what =
    spec.algorithm === 'concurrency'
      ? `concurrency ${spec.max}`
      : `${spec.algorithm} ${spec.limit} per ${formatDuration(spec.window)}`
  return `"${policy.name}" (${what}${policy.block === undefined ? '' : `, block ${formatDuration(policy.block.forMs)}`})`
}

/** Per store: the policy each name stands for, and the middleware that brought it. */
const claims = new WeakMap<object, Map<string, { policy: Policy; owner: string }>>()

/**
 * Refuses a reconfiguration on a store that keeps each spec's state apart: there a new
 * spec would start every key afresh, the reset reconfiguring exists to avoid.
 *
 * @example
 * ```ts
 * checkCarries(store, 'keyedLimiter.reconfigure')
 * ```
 */
export function checkCarries(store: Store, method: string): void {
  if (store.carries === true) return
  throw new TypeError(
    `${method}: this store keeps each spec's state apart (by name and spec) and cannot carry it over to a new spec, so reconfiguring would start every key afresh; use a store that carries state (memory, Redis, Durable Objects, Deno KV, the cluster store) or build a new limiter under another name`,
  )
}

/**
 * Records that a middleware uses `policies` on `store`, refusing a policy whose name is
 * already taken on that store by one of another algorithm: a name's state means one thing
 * (a window's counts are no bucket's level), and headers would show one name for two
 * budgets. The same name with another spec of the same algorithm is a reconfiguration:
 * its state carries over, and the last spec claimed is the one recorded. Caught when the
 * second middleware is created.
 *
 * @example
 * ```ts
 * claimPolicies(store, engine.policies, 'rateLimit')
 * ```
 */
export function claimPolicies(store: Store, policies: readonly Policy[], factory: string): void {
  let names = claims.get(store)
  if (names === undefined) {
    names = new Map()
    claims.set(store, names)
  }
  for (const policy of policies) {
    const claim = names.get(policy.name)
    if (claim === undefined) continue
    if (store.carries !== true && claim.policy.id !== policy.id) {
      throw new TypeError(
        `${factory}: policy ${describePolicy(policy)} shares its name with policy ${describePolicy(claim.policy)} of an earlier ${claim.owner} on the same store; give one of them another name (this store keeps each spec's state apart, so one name would show two budgets)`,
      )
    }
    if (claim.policy.state !== policy.state) {
      throw new TypeError(
        `${factory}: policy ${describePolicy(policy)} shares its name with policy ${describePolicy(claim.policy)} of an earlier ${claim.owner} on the same store, of another algorithm; give one of them another name (a spec of the same algorithm would carry the state over)`,
      )
    }
  }
  for (const policy of policies) names.set(policy.name, { policy, owner: factory })
}
