import type { PriorityName, PriorityOptions, QueuePolicy } from '../types'
import {
  describe,
  rangeError,
  readOneOf,
  readPositiveDuration,
  suggest,
  typeError,
} from '../validation'

/**
 * The number each priority name stands for: names and numbers mix, so `priority: 2` and
 * `priority: 'critical'` are the same priority and share one partition.
 *
 * @example
 * ```ts
 * PRIORITIES.critical // 2
 * ```
 */
export const PRIORITIES: Readonly<Record<PriorityName, number>> = {
  sheddable: 0,
  default: 1,
  critical: 2,
}

/** The priority of a request that names none. */
export const DEFAULT_PRIORITY = PRIORITIES.default

const NAMES = Object.keys(PRIORITIES) as PriorityName[]
const KNOWN = "'critical', 'default', 'sheddable' or a finite number"

const POLICIES: readonly QueuePolicy[] = ['fifo', 'codel', 'adaptive-lifo']

/** What the wait queue needs of {@link PriorityOptions}, validated. */
export interface QueueSettings {
  readonly maxQueue: number
  /** Guaranteed share of the limit by priority. */
  readonly partitions: ReadonlyMap<number, number>
  readonly policy: QueuePolicy
  readonly targetMs: number
  readonly intervalMs: number
}

/** The option names of {@link PriorityOptions}, for unknown-option checks. */
export const PRIORITY_OPTIONS = [
  'partitions',
  'queuePolicy',
  'queueTarget',
  'queueInterval',
] as const

/**
 * A priority as a number: a name's number, a finite number as is, `'default'` when absent.
 * Read per call, so it throws the caller's `method` in the message.
 *
 * @example
 * ```ts
 * readPriority('concurrency.tryEnter', 'critical') // 2
 * ```
 */
export function readPriority(method: string, value: unknown): number {
  if (value === undefined) return DEFAULT_PRIORITY
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return value
    throw new RangeError(`${method}: "priority" must be ${KNOWN}, got ${describe(value)}`)
  }
  if (typeof value === 'string' && Object.hasOwn(PRIORITIES, value)) {
    return PRIORITIES[value as PriorityName]
  }
  const hint = typeof value === 'string' ? suggest(value, NAMES) : undefined
  throw new TypeError(
    `${method}: "priority" must be ${KNOWN}, got ${describe(value)}${hint === undefined ? '' : ` (did you mean '${hint}'?)`}`,
  )
}

/**
 * The partition a priority's requests count in, as refusals, events and headers name it:
 * the priority's name, or its number written out.
 *
 * @example
 * ```ts
 * partitionName(0) // 'sheddable'
 * partitionName(7) // '7'
 * ```
 */
export function partitionName(priority: number): string {
  for (const name of NAMES) if (PRIORITIES[name] === priority) return name
  return String(priority)
}

/** Shares may be written so that floating point sums them a hair above 1 (0.1 + 0.2 + 0.7). */
const SUM_SLACK = 1e-9

/**
 * `partitions` as a map from priority to share, checked: known names or numbers, shares
 * in (0, 1], no priority twice, a sum of at most 1.
 *
 * @example
 * ```ts
 * readPartitions('bulkhead', 'partitions', { critical: 0.5, '5': 0.1 }) // Map { 2 => 0.5, 5 => 0.1 }
 * ```
 */
export function readPartitions(
  factory: string,
  option: string,
  value: unknown,
): Map<number, number> {
  const partitions = new Map<number, number>()
  if (value === undefined) return partitions
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw typeError(
      factory,
      option,
      'must be an object of shares by priority, e.g. { critical: 0.5 }',
      value,
    )
  }
  const named = new Map<number, string>()
  let sum = 0
  for (const [key, share] of Object.entries(value)) {
    const priority = partitionPriority(factory, option, key)
    if (typeof share !== 'number' || !(share > 0 && share <= 1)) {
      const rule = 'must be a share of the limit in (0, 1]'
      if (typeof share !== 'number') throw typeError(factory, `${option}.${key}`, rule, share)
      throw rangeError(factory, `${option}.${key}`, rule, share)
    }
    const earlier = named.get(priority)
    if (earlier !== undefined) {
      throw new RangeError(
        `${factory}: "${option}" names priority ${priority} twice ("${earlier}" and "${key}")`,
      )
    }
    named.set(priority, key)
    partitions.set(priority, share)
    sum += share
  }
  if (sum > 1 + SUM_SLACK) {
    const terms = [...named].map(([p, key]) => `${key} ${partitions.get(p)}`).join(' + ')
    throw new RangeError(
      `${factory}: "${option}" shares must sum to at most 1, got ${Number(sum.toFixed(9))} (${terms})`,
    )
  }
  return partitions
}

function partitionPriority(factory: string, option: string, key: string): number {
  if (Object.hasOwn(PRIORITIES, key)) return PRIORITIES[key as PriorityName]
  const number = key.trim() === '' ? Number.NaN : Number(key)
  if (Number.isFinite(number)) return number
  const hint = suggest(key, NAMES)
  throw new TypeError(
    `${factory}: "${option}" has an unknown priority "${key}" (known: ${KNOWN}${hint === undefined ? '' : `; did you mean '${hint}'?`})`,
  )
}

/**
 * The options of {@link PriorityOptions}, validated: `queueTarget` and `queueInterval`
 * only with a shedding policy, the target shorter than the interval. `prefix` goes before
 * each option name in messages (`policies[1].`); `defaultPolicy` is the policy when none
 * is given.
 *
 * @example
 * ```ts
 * readQueueSettings('concurrency', { queuePolicy: 'codel' }, 10)
 * // { maxQueue: 10, partitions: Map {}, policy: 'codel', targetMs: 5, intervalMs: 100 }
 * ```
 */
export function readQueueSettings(
  factory: string,
  options: PriorityOptions,
  maxQueue: number,
  { prefix = '', defaultPolicy = 'fifo' }: { prefix?: string; defaultPolicy?: QueuePolicy } = {},
): QueueSettings {
  const name = (option: string) => `${prefix}${option}`
  const policy = readOneOf(
    factory,
    name('queuePolicy'),
    options.queuePolicy,
    POLICIES,
    defaultPolicy,
  )
  if (policy === 'fifo') {
    for (const option of ['queueTarget', 'queueInterval'] as const) {
      if (options[option] !== undefined) {
        throw new TypeError(
          `${factory}: "${name(option)}" applies to queuePolicy 'codel' or 'adaptive-lifo', not 'fifo'`,
        )
      }
    }
  }
  const targetMs = readPositiveDuration(factory, name('queueTarget'), options.queueTarget, '5ms')
  const intervalMs = readPositiveDuration(
    factory,
    name('queueInterval'),
    options.queueInterval,
    '100ms',
  )
  if (!(intervalMs > targetMs)) {
    throw new RangeError(
      `${factory}: "${name('queueInterval')}" must be longer than "${name('queueTarget')}" (${targetMs} ms), got ${intervalMs} ms`,
    )
  }
  return {
    maxQueue,
    partitions: readPartitions(factory, name('partitions'), options.partitions),
    policy,
    targetMs,
    intervalMs,
  }
}

/**
 * For `reconfigure`: the queue settings `options` give, which may change `maxQueue` only.
 * Priorities are how this process admits, fixed when the limiter is built: options that
 * say otherwise are refused (naming `method`), and options that leave them out keep them.
 *
 * @example
 * ```ts
 * readQueueReconfigure('concurrency.reconfigure', {}, current, 5) // current, with maxQueue 5
 * ```
 */
export function readQueueReconfigure(
  method: string,
  options: PriorityOptions,
  current: QueueSettings,
  maxQueue: number,
): QueueSettings {
  if (PRIORITY_OPTIONS.every((option) => options[option] === undefined)) {
    return { ...current, maxQueue }
  }
  const next = readQueueSettings(method, options, maxQueue)
  const same =
    next.policy === current.policy &&
    next.targetMs === current.targetMs &&
    next.intervalMs === current.intervalMs &&
    next.partitions.size === current.partitions.size &&
    [...next.partitions].every(([priority, share]) => current.partitions.get(priority) === share)
  if (!same) {
    throw new TypeError(
      `${method}: priorities (${PRIORITY_OPTIONS.join(', ')}) cannot change; build a new limiter to change them`,
    )
  }
  return next
}
