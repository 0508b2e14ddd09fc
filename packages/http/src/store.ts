import type { LimiterSpec } from '@sluice/core'

/** A value or a promise of it: the memory store answers synchronously, Redis does not. */
export type MaybePromise<T> = T | Promise<T>

/**
 * One limit a request is checked against: a validated limiter spec with a name.
 * The name is shown in RateLimit headers and namespaces the policy's state in a store,
 * so it must be unique among the policies that share one store.
 */
export interface Policy {
  readonly name: string
  /** Validated at construction; durations are already numbers of milliseconds. */
  readonly spec: LimiterSpec
  /** Quota per window (for a concurrency policy: `max`). */
  readonly limit: number
  /** Window in milliseconds (0 for a concurrency policy). */
  readonly windowMs: number
}

/** A concurrency slot held in a store; hand it back to `release`. */
export interface Lease {
  /** Opaque to callers; lets a store find the slot again (Redis keeps one entry per lease). */
  readonly id: string
  readonly permits: number
}

/** The state of one policy for one key, as a decision left it. */
export interface PolicyResult {
  readonly policy: Policy
  /** Whether this policy alone would have admitted the request. */
  readonly allowed: boolean
  readonly limit: number
  /** Permits left after the decision (never negative). */
  readonly remaining: number
  /** Milliseconds until this policy is back to fresh. */
  readonly resetMs: number
  /** Milliseconds until a rejected request could pass: 0 when allowed, Infinity for never. */
  readonly retryAfterMs: number
  /** Present when a concurrency policy admitted the request. */
  readonly lease?: Lease
}

/** The outcome of `Store.take`: all policies admitted, or none took anything. */
export interface TakeResult {
  readonly allowed: boolean
  /** One entry per policy, in the order given. */
  readonly results: readonly PolicyResult[]
}

/**
 * Where per-key limiter state lives: `memoryStore()` in this process, `redisStore()`
 * across processes. Every method may answer synchronously or with a promise.
 */
export interface Store {
  /**
   * Takes `cost` permits for `key` from every policy, atomically: if any policy rejects,
   * nothing is taken from any of them.
   */
  take(key: string, policies: readonly Policy[], cost: number): MaybePromise<TakeResult>
  /** Gives `cost` permits back to the time-based policies (outcome-based counting). */
  refund(key: string, policies: readonly Policy[], cost: number): MaybePromise<void>
  /** Frees a concurrency slot taken by `take`. Releasing the same lease twice is a no-op. */
  release(key: string, policy: Policy, lease: Lease): MaybePromise<void>
  /** The current state of each policy for `key`, taking nothing. */
  get(key: string, policies: readonly Policy[]): MaybePromise<readonly PolicyResult[]>
  /** Forgets `key` under the given policies (all policies when omitted). */
  reset(key: string, policies?: readonly Policy[]): MaybePromise<void>
}
