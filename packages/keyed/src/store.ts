import type { Carry, NormalizedSpec } from '@sluice/core'
import type { MaybePromise } from './maybe-promise'

export type { MaybePromise } from './maybe-promise'

/**
 * A penalty: a key refused `after` times within the refusing policy's window is refused
 * outright for `forMs`, whatever its budget says.
 */
export interface Penalty {
  readonly forMs: number
  readonly after: number
}

/**
 * One limit a request is checked against: a validated, normalized limiter spec with a name.
 * The name is shown in RateLimit headers. A policy's state belongs to its name: a store
 * keeps it under `state` (name and algorithm) with the `fingerprint` of the spec that wrote
 * it beside, and a take under another spec of the same name carries it over (`carry`)
 * once. A store that cannot convert keeps state under `id` (name and spec) instead.
 */
export interface Policy {
  readonly name: string
  /** Normalized: durations in milliseconds, every default filled in. */
  readonly spec: NormalizedSpec
  /**
   * What a store namespaces this policy's state by: the name and every number of the spec
   * (and penalty), e.g. `api|sw:100:60000:10`. Equal for equal policies in any process.
   */
  readonly id: string
  /**
   * What a store that converts state keys it by: the name and the algorithm, e.g.
   * `api|sliding-window`, so a changed spec under one name finds the state it carries.
   */
  readonly state: string
  /**
   * Every number of the spec (and penalty), e.g. `sliding-window:100:60000:10`: stored
   * beside the state, compared on each touch; a different one means the state was written
   * under another spec and is carried over first.
   */
  readonly fingerprint: string
  /**
   * How state written under another spec of this name carries over to this one (Bucket4j's
   * four modes; see `Carry` in `@sluice/core`). Default `'proportional'`.
   */
  readonly carry?: Carry | undefined
  /** Quota per window (for a concurrency policy: `max`). */
  readonly limit: number
  /** Window in milliseconds (0 for a concurrency policy). */
  readonly windowMs: number
  /** Blocks keys that keep being refused (time-based policies only). */
  readonly block?: Penalty | undefined
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
  /** Permits left after the decision (never negative; 0 while blocked). */
  readonly remaining: number
  /**
   * Milliseconds until more quota becomes available (draft -10's `t`): until one more
   * permit frees up, or the block ends; 0 when the policy is full. On a refusal at cost 1
   * it equals `retryAfterMs`.
   */
  readonly resetMs: number
  /** Milliseconds until a refused request could pass: 0 when allowed, Infinity for never. */
  readonly retryAfterMs: number
  /** Present when a concurrency policy admitted the request. */
  readonly lease?: Lease | undefined
  /**
   * Present when a time-based policy took permits: identifies the window, slot or bucket
   * period they count in, so a later `refund` gives back only what still counts.
   */
  readonly receipt?: number | undefined
  /** True when the key is blocked by this policy's penalty (this refusal may have started it). */
  readonly blocked?: boolean | undefined
}

/** The outcome of `Store.take`: all policies admitted, or none took anything. */
export interface TakeResult {
  readonly allowed: boolean
  /** One entry per policy, in the order given. */
  readonly results: readonly PolicyResult[]
}

/**
 * Permits a call charges: one number for every policy, or one per policy, in order (0: that
 * policy is not charged, only checked: a policy in debt or blocked still refuses). A cost
 * is a non-negative safe integer; a single number must be positive.
 */
export type Cost = number | readonly number[]

/**
 * A result a caller owns and passes to `take`, which a store may fill instead of making
 * a new one (the memory store does; a remote store may ignore it): one per caller, reused
 * for every decision, read before the next. `results` grows to one entry per policy.
 */
export interface TakeBuffer {
  allowed: boolean
  readonly results: {
    policy: Policy
    allowed: boolean
    limit: number
    remaining: number
    resetMs: number
    retryAfterMs: number
    lease: Lease | undefined
    receipt: number | undefined
    blocked: boolean | undefined
  }[]
}

/**
 * Where per-key limiter state lives: `memoryStore()` in this process, `redisStore()`
 * across processes. Every method may answer synchronously or with a promise.
 * `@sluice/keyed/testing` exports the contract (`runStoreContract`) and the model-based
 * test (`runStoreModel`) every store must pass.
 */
export interface Store {
  /**
   * True for a store that keeps a policy's state by name (`Policy.state`) and carries it
   * over to a changed spec of the same algorithm on the next touch (memory, Redis, Durable
   * Objects, Deno KV, the cluster store). A store without it keeps each spec's state apart (`Policy.id`): one
   * name may then stand for one spec only, and `reconfigure` is refused (a new spec would
   * start every key afresh).
   */
  readonly carries?: boolean
  /**
   * Takes `cost` permits for `key` from every policy, atomically: if any policy refuses,
   * nothing is taken from any of them. A policy with a penalty counts the refusal and may
   * start a block; a blocked key is refused by that policy until the block ends. With
   * `into`, the store may answer in it (and returns it) instead of a new result.
   */
  take(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    into?: TakeBuffer,
  ): MaybePromise<TakeResult>
  /**
   * Gives `cost` permits back to the time-based policies (outcome-based counting), never
   * beyond fresh. With the `receipts` of the take (one per policy, in order, as
   * `PolicyResult.receipt`), permits whose window, slot or bucket period has passed are
   * not given back: they no longer count.
   */
  refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts?: readonly (number | undefined)[],
  ): MaybePromise<void>
  /**
   * Takes `cost` permits from the time-based policies whether they fit or not: debt (a
   * penalty, a settle above its estimate) that later takes wait out. Answers each policy's
   * state after it.
   */
  force(key: string, policies: readonly Policy[], cost: Cost): MaybePromise<readonly PolicyResult[]>
  /**
   * Settles a take at its actual cost, in one call: gives `back` permits back (as `refund`,
   * with the take's `receipts`), then takes `more` whether they fit or not (as `force`).
   * Answers each policy's state after it. Optional: without it, a settle is a `refund`
   * followed by a `force` (or a `get`), two calls; a remote store has it so that a settle
   * is one round trip.
   */
  settle?(
    key: string,
    policies: readonly Policy[],
    back: Cost,
    more: Cost,
    receipts?: readonly (number | undefined)[],
  ): MaybePromise<readonly PolicyResult[]>
  /**
   * Blocks `key` under the time-based `policies` for `ms` from now (0 lifts a block),
   * whatever their budgets say, as a policy's penalty does.
   */
  block(key: string, policies: readonly Policy[], ms: number): MaybePromise<void>
  /** Frees a concurrency slot taken by `take`. Releasing the same lease twice is a no-op. */
  release(key: string, policy: Policy, lease: Lease): MaybePromise<void>
  /** The current state of each policy for `key`, taking nothing. */
  get(key: string, policies: readonly Policy[]): MaybePromise<readonly PolicyResult[]>
  /** Forgets `key` (and any block on it) under the given policies (all when omitted). */
  reset(key: string, policies?: readonly Policy[]): MaybePromise<void>
  /**
   * Forgets every key under every policy, blocks included. Slots still in flight are
   * forgotten too: their later release is a no-op.
   */
  resetAll(): MaybePromise<void>
}

/**
 * A store whose every method answers with a promise: one whose state lives elsewhere
 * (Redis, Durable Objects, Deno KV).
 */
export interface AsyncStore extends Store {
  take(key: string, policies: readonly Policy[], cost: Cost, into?: TakeBuffer): Promise<TakeResult>
  refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts?: readonly (number | undefined)[],
  ): Promise<void>
  force(key: string, policies: readonly Policy[], cost: Cost): Promise<readonly PolicyResult[]>
  block(key: string, policies: readonly Policy[], ms: number): Promise<void>
  release(key: string, policy: Policy, lease: Lease): Promise<void>
  get(key: string, policies: readonly Policy[]): Promise<readonly PolicyResult[]>
  reset(key: string, policies?: readonly Policy[]): Promise<void>
  resetAll(): Promise<void>
}
