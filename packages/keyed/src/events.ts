/**
 * What sluice reports on `node:diagnostics_channel`, the convention undici, fastify and
 * mysql2 use: subscribe by name from anywhere, and pay nothing while nobody listens (each
 * publisher checks `hasSubscribers` before building a message).
 *
 * @example
 * ```ts
 * import diagnostics from 'node:diagnostics_channel'
 * diagnostics.subscribe('sluice:rate-limit', (message) => {
 *   const event = message as RateLimitEvent
 *   if (!event.allowed) console.log(`${event.key} refused by ${event.policy}`)
 * })
 * ```
 *
 * @module
 */

/** Published on `sluice:rate-limit` once per decided request (not for skipped ones). */
export interface RateLimitEvent {
  /** The budget the request was counted against. */
  readonly key: string
  /** The policy the decision shows: the refusing one with the longest wait, or the one with the fewest permits left. */
  readonly policy: string
  /** Whether the limits admitted the request (in dry run: whether they would have). */
  readonly allowed: boolean
  /** False only in dry run, where a refusal is reported but not carried out. */
  readonly enforced: boolean
  /** Permits left under the policy shown. */
  readonly remaining: number
  /** Permits the request asked for. */
  readonly cost: number
  /** 0 when allowed; otherwise milliseconds until it could pass (`Infinity`: never). */
  readonly retryAfterMs: number
  /** Every policy's verdict, in the order configured. */
  readonly policies: readonly {
    readonly name: string
    readonly allowed: boolean
    readonly remaining: number
  }[]
  /**
   * Dry run only: why no decision could be made (a throwing `key`, a failing store). The
   * request passed undecided; `key` and `policy` are empty, the numbers 0.
   */
  readonly error?: unknown
}

/** Published on `sluice:bulkhead` as things happen to one request's slot, in order. */
export interface BulkheadEvent {
  readonly key: string
  /** The bulkhead's policy name. */
  readonly policy: string
  /**
   * `enter` (a slot taken), `reject` (refused), `queue` (waiting for a slot), `timeout` (its
   * `queueTimeout` passed; a `reject` follows), `cancel` (it left the queue because its client
   * went away, or the store failed), `release` (the slot given back).
   */
  readonly event: 'enter' | 'reject' | 'queue' | 'timeout' | 'cancel' | 'release'
  /** Slots this middleware holds in this process after the event, over all its keys. */
  readonly inFlight: number
  /** Requests waiting in this middleware after the event, over all its keys. */
  readonly queued: number
  /**
   * How long the request waited in the queue: on `timeout`, on `cancel`, and on an `enter`
   * after queueing.
   */
  readonly waitedMs?: number
  /** How long the slot was held: on `release`. */
  readonly heldMs?: number
  /**
   * A bulkhead with `priority`: the request's partition (named after its priority,
   * `'critical'`, `'sheddable'`, `'7'`) on every event of the request; on a `reject`, the
   * partition that refused.
   */
  readonly partition?: string
}

/** Published on `sluice:store` when a shared store starts failing and when it recovers. */
export interface StoreEvent {
  readonly event: 'failure' | 'recovery'
  /** Which store (e.g. `'redisStore'`). */
  readonly store: string
  /** Why it failed: on `failure`. */
  readonly error?: unknown
}

/** Published on `sluice:adaptive` when an adaptive concurrency limit moves. */
export interface AdaptiveLimitEvent {
  readonly limiter: string
  readonly algorithm: string
  readonly limit: number
  readonly previous: number
}

/** The channel names, as constants. */
export const CHANNELS = {
  rateLimit: 'sluice:rate-limit',
  bulkhead: 'sluice:bulkhead',
  store: 'sluice:store',
  adaptive: 'sluice:adaptive',
} as const

/** The part of a `diagnostics_channel` channel a publisher uses. */
export interface Channel<T> {
  readonly hasSubscribers: boolean
  publish(message: T): void
}

interface DiagnosticsChannel {
  channel(name: string): Channel<unknown>
}

const silent: Channel<never> = { hasSubscribers: false, publish() {} }

/**
 * `node:diagnostics_channel` where the runtime has it (Node, Bun, Deno, Workers with
 * `nodejs_compat`), found through `process.getBuiltinModule` so that this package imports
 * nothing Node-only and still loads everywhere; elsewhere channels that nobody can hear.
 */
function diagnostics(): DiagnosticsChannel | undefined {
  const host = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process
  try {
    return host?.getBuiltinModule?.('node:diagnostics_channel') as DiagnosticsChannel | undefined
  } catch {
    return undefined
  }
}

function open<T>(name: string): Channel<T> {
  return (diagnostics()?.channel(name) as Channel<T> | undefined) ?? silent
}

/** `sluice:rate-limit`. */
export const rateLimitChannel: Channel<RateLimitEvent> = open(CHANNELS.rateLimit)
/** `sluice:bulkhead`. */
export const bulkheadChannel: Channel<BulkheadEvent> = open(CHANNELS.bulkhead)
/** `sluice:store`. */
export const storeChannel: Channel<StoreEvent> = open(CHANNELS.store)
/** `sluice:adaptive`. */
export const adaptiveChannel: Channel<AdaptiveLimitEvent> = open(CHANNELS.adaptive)
