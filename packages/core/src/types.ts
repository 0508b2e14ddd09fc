/**
 * A length of time: milliseconds as a number, or a string such as `'250ms'`, `'1s'`,
 * `'1.5s'`, `'5m'`, `'2h'` or `'1d'`. A limiter's `window` and `warmUp` are whole
 * microseconds up to 2^53 µs (about 285 years); other durations (timeouts, a lease's
 * `ttl`) up to 2^53 ms.
 */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`

/**
 * The source of time for every limiter. `now()` is monotonic milliseconds (fractions
 * allowed), never wall-clock time, so NTP steps and manual clock changes can neither
 * release a flood nor freeze a limiter.
 */
export interface Clock {
  /** Monotonic milliseconds. */
  now(): number
  /** Resolves once `now()` has reached `now() + ms`; rejects with `signal.reason` on abort. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
}

/** What every limiter answers, with or without a time axis. */
export interface Limiter {
  readonly name: string
  /** Takes `permits` (default 1) if available right now. Never waits, never allocates. */
  tryAcquire(permits?: number): boolean
  /** How many permits `tryAcquire` could take right now. */
  availablePermits(): number
}

/** Options for waiting calls (`acquire`, `enter`). */
export interface WaitOptions {
  /** Give up after this long with `RateLimitError` `ERR_SLUICE_TIMEOUT`. Default: wait without bound. */
  timeout?: Duration
  /** Aborting rejects with `signal.reason` and takes nothing. */
  signal?: AbortSignal
}

/** The five limiters with a time axis. */
export interface RateLimiter extends Limiter {
  /** Quota per window, as advertised in RateLimit headers. */
  readonly limit: number
  /** Window length in milliseconds. */
  readonly windowMs: number
  /** Milliseconds until `tryAcquire(permits)` would pass: 0 now, `Infinity` never. */
  retryAfterMs(permits?: number): number
  /** Milliseconds until the limiter is back to fresh (full). */
  resetMs(): number
  /**
   * Gives back permits taken earlier; never lifts the limiter above fresh. With the
   * `receipt` of the take (see {@link RateLimiter.receipt}), only permits that still count
   * come back: permits whose window, slot or bucket period has passed are gone already,
   * and refunding them would credit a later period. Without one, the permits are taken to
   * be the most recent ones.
   */
  refund(permits?: number, receipt?: number): void
  /**
   * Identifies the permits of the latest successful `tryAcquire` (or `acquire`): the
   * window (fixed window), slot (sliding window) or theoretical arrival time (GCRA) they
   * count in. Pass it to `refund` to give back only what still counts.
   */
  receipt(): number
  /** Waits (FIFO) until `permits` are taken, up to `timeout`, cancellable by `signal`. */
  acquire(permits?: number, options?: WaitOptions): Promise<void>
  /**
   * Changes the spec while the limiter runs, carrying its state over as `carry` says
   * (default `'proportional'`; see `Carry`). The spec is whole, of the same
   * algorithm: options left out take their defaults. Waiters keep their places: a bucket's
   * reservations are served at their times, a window's queue is served in order under the
   * new limit (a waiter asking more than it can ever hold is rejected). Bad input throws
   * and leaves the old spec working.
   */
  reconfigure(spec: ReconfigureSpec<RateLimiterSpec>, options?: ReconfigureOptions): void
}

/** A held slot of a concurrency limiter. `using p = limiter.tryEnter()` frees it on scope exit. */
export interface Permit extends Disposable {
  /** How many permits this holds. */
  readonly permits: number
  /** Frees the permits. A second explicit call throws; dispose after release is a no-op. */
  release(): void
}

/**
 * How important a request is: `'sheddable'` (0), `'default'` (1), `'critical'` (2), or any
 * finite number (higher is more important). Under overload the lowest is refused first.
 */
export type Priority = PriorityName | number

/** The named priorities. */
export type PriorityName = 'critical' | 'default' | 'sheddable'

/**
 * How the wait queue behaves once waiting stops helping:
 * - `'fifo'`: first come, first served within a priority, until `maxQueue` or the timeout;
 * - `'codel'`: as Facebook's and folly's CoDel queues do, a priority whose waiters all
 *   waited longer than `queueTarget` over a whole `queueInterval` is overloaded: its
 *   newcomers that would wait longer than the target are refused at once, and its waiters
 *   past twice the target are dropped, oldest first;
 * - `'adaptive-lifo'`: CoDel's rules, and while a priority is overloaded its newest waiter
 *   is served first (Facebook's adaptive LIFO): the oldest, whose callers have most likely
 *   given up, are the ones dropped.
 */
export type QueuePolicy = 'fifo' | 'codel' | 'adaptive-lifo'

/**
 * Guaranteed shares of the limit, by priority: `{ critical: 0.5 }` keeps half the permits
 * for critical requests. A share another priority does not use is lent, and taken back:
 * once its owner waits, the next permit released goes to it. Shares are in (0, 1] and sum
 * to at most 1; priorities not listed share what is left.
 */
export type Partitions = Readonly<Partial<Record<PriorityName, number>> & Record<string, number>>

/** The options every prioritized limiter and bulkhead takes. */
export interface PriorityOptions {
  /** Guaranteed shares of the limit, by priority. Default: none. */
  partitions?: Partitions
  /** How the queue sheds once waiting stops helping. Default `'fifo'`. */
  queuePolicy?: QueuePolicy
  /** `'codel'` and `'adaptive-lifo'`: the queueing delay to keep below. Default `'5ms'`. */
  queueTarget?: Duration
  /**
   * `'codel'` and `'adaptive-lifo'`: how long every waiter must have waited longer than
   * the target before a priority counts as overloaded. Default `'100ms'`.
   */
  queueInterval?: Duration
}

/** What `tryEnter` and `enter` of a concurrency limiter take besides waiting options. */
export interface EnterOptions {
  /** Permits to hold. Default 1. */
  permits?: number
  /**
   * How important the caller is: `'critical'`, `'default'` (the default), `'sheddable'`
   * or any finite number (higher is more important). Under overload the lowest is refused first.
   */
  priority?: Priority
}

/** A bulkhead: permits in flight, no time axis. */
export interface ConcurrencyLimiter extends Limiter {
  readonly max: number
  readonly maxQueue: number
  /** Permits currently held. */
  readonly inFlight: number
  /** Callers currently waiting in `enter`. */
  readonly queued: number
  /**
   * Frees permits taken with `tryAcquire` (counted at the default priority); releasing
   * more than is held throws.
   */
  release(permits?: number): void
  /**
   * A `Permit` for `permits` (default 1; or `{ permits, priority }`), or `undefined` when
   * full or when a waiter goes first.
   */
  tryEnter(options?: number | EnterOptions): Permit | undefined
  /**
   * Waits for a `Permit` in a queue of at most `maxQueue`: by priority, then first come,
   * first served (see `queuePolicy`).
   */
  enter(options?: WaitOptions & EnterOptions): Promise<Permit>
  /**
   * Changes `max` and `maxQueue` while the limiter runs. Permits in flight are never
   * revoked: below `inFlight`, new entries are refused until enough are released. Queued
   * waiters keep their order and are served as room appears (one asking more than the new
   * `max` is rejected); a shorter `maxQueue` turns away only newcomers. Priorities stay as
   * built (given again, they must be unchanged). `carry` is checked but changes nothing
   * here: held permits are all the state there is.
   */
  reconfigure(
    spec: ReconfigureSpec<ConcurrencySpec> & PriorityOptions,
    options?: ReconfigureOptions,
  ): void
}

/** Options every factory takes. */
export interface CommonOptions {
  /** Shown in errors and headers. Default: the algorithm's name. */
  name?: string
  /** Default: `systemClock`. */
  clock?: Clock
}

export interface TokenBucketOptions extends CommonOptions {
  /** Permits per window (the sustained rate). */
  limit: number
  /** Default `'1s'`. */
  window?: Duration
  /** Largest burst. Default: `limit`. */
  capacity?: number
}

export interface LeakyBucketOptions extends CommonOptions {
  limit: number
  window?: Duration
}

export interface SlidingWindowOptions extends CommonOptions {
  limit: number
  window?: Duration
  /** Buckets the window is cut into; precision is one slot. Default 10. */
  slots?: number
}

export interface FixedWindowOptions extends CommonOptions {
  limit: number
  window?: Duration
}

export interface WarmUpTokenBucketOptions extends TokenBucketOptions {
  /** How long, from creation, the rate takes to climb from limit/3 to limit. */
  warmUp: Duration
}

export interface ConcurrencyOptions extends CommonOptions, PriorityOptions {
  /** Permits that may be in flight at once. */
  max: number
  /**
   * Callers that may wait in `enter`. Default 0. Callers owed a permit by their partition,
   * or outranking requests in flight, may wait besides.
   */
  maxQueue?: number
}

type SpecOf<A extends string, O> = { algorithm: A } & Omit<O, 'clock' | keyof PriorityOptions>

/** A plain, serialisable description of any limiter: what the HTTP layer and stores share. */
export type LimiterSpec =
  | SpecOf<'token-bucket', TokenBucketOptions>
  | SpecOf<'leaky-bucket', LeakyBucketOptions>
  | SpecOf<'sliding-window', SlidingWindowOptions>
  | SpecOf<'fixed-window', FixedWindowOptions>
  | SpecOf<'warm-up', WarmUpTokenBucketOptions>
  | SpecOf<'concurrency', ConcurrencyOptions>

type ConcurrencySpec = Extract<LimiterSpec, { algorithm: 'concurrency' }>

/**
 * What `reconfigure` takes: a whole spec of the limiter's own algorithm, as
 * `createLimiter` takes it or as its factory's options (`algorithm` left out). `name` and
 * `clock` may be given only as they are.
 */
export type ReconfigureSpec<S extends LimiterSpec = LimiterSpec> = (S extends unknown
  ? S | Omit<S, 'algorithm'>
  : never) & { clock?: Clock }

/**
 * The name of a limiter algorithm, as written in a spec for {@link createLimiter} (and in
 * the HTTP middleware's `algorithm` option): `'token-bucket'`, `'leaky-bucket'`,
 * `'sliding-window'`, `'fixed-window'`, `'warm-up'` or `'concurrency'`. `ALGORITHMS`
 * lists them all.
 */
export type Algorithm = LimiterSpec['algorithm']

/**
 * A {@link LimiterSpec} as `normalizeSpec` returns it: validated, durations in
 * milliseconds, every default filled in and no `name`. Two specs that describe the same
 * limiter normalize to equal objects, which is what lets a store tell policies apart by value.
 */
export type NormalizedSpec =
  | { algorithm: 'token-bucket'; limit: number; window: number; capacity: number }
  | { algorithm: 'leaky-bucket'; limit: number; window: number }
  | { algorithm: 'sliding-window'; limit: number; window: number; slots: number }
  | { algorithm: 'fixed-window'; limit: number; window: number }
  | { algorithm: 'warm-up'; limit: number; window: number; capacity: number; warmUp: number }
  | { algorithm: 'concurrency'; max: number; maxQueue: number }

/** The normalized specs of the five time-based limiters. */
export type NormalizedRateSpec = Exclude<NormalizedSpec, { algorithm: 'concurrency' }>
/** The specs of the five time-based limiters. */
export type RateLimiterSpec = Exclude<LimiterSpec, { algorithm: 'concurrency' }>
/**
 * The name of a time-based algorithm (one with a `RateLimiter`): every {@link Algorithm}
 * but `'concurrency'`. `RATE_ALGORITHMS` lists them.
 */
export type RateAlgorithm = RateLimiterSpec['algorithm']

/**
 * How a reconfiguration carries a key's state over to the new spec of the same algorithm
 * (Bucket4j's four token-inheritance strategies). Each acts on the permits available now
 * (for a window: limit − used in the current window):
 *
 * - `'proportional'` (default): available × new / old (capacity for buckets, limit for
 *   windows), rounded down; a window's used counts scale the same way (Guava's `setRate`).
 * - `'as-is'`: available unchanged, capped at the new capacity.
 * - `'additive'`: available + (new − old): every permit taken still counts against the
 *   new limit, so a key that used more than the new limit owes the rest (0 available).
 * - `'reset'`: a fresh state, the only mode that forgives debt.
 *
 * In every mode but `'reset'` debt stays owed: the instant the permits already granted are
 * paid off does not move, and the new spec applies from then. A fresh key stays fresh
 * (a store forgets fresh keys, so one it kept and one it forgot come out the same), and a
 * warm-up bucket keeps its age.
 */
export type Carry = 'proportional' | 'as-is' | 'reset' | 'additive'

/** The second argument of `reconfigure`. */
export interface ReconfigureOptions {
  /** How the state carries over to the new spec. Default `'proportional'`. */
  carry?: Carry
}
