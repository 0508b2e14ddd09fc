import {
  type Clock,
  type ConcurrencyLimiter,
  createLimiter,
  type NormalizedRateSpec,
  type RateLimiter,
} from '@sluice/core'
import { type CompactRateLimiter, isCompact } from '@sluice/core/internal'
import { readClock, readOptions, readPositiveInteger } from '@sluice/core/validation'
import { LRUCache } from 'lru-cache'
import type { Lease, Penalty, Policy, PolicyResult, Store, TakeResult } from './store'

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Most client keys each time-based policy keeps state for (an LRU). Default 100,000.
   * At most 10,000,000: the LRU sizes its index for this many keys up front.
   */
  maxKeys?: number
  /** Time source for the limiters (pass a `ManualClock` in tests). Default `systemClock`. */
  clock?: Clock
}

/** The in-process store: every method answers synchronously. */
export interface MemoryStore extends Store {
  take(key: string, policies: readonly Policy[], cost: number): TakeResult
  refund(
    key: string,
    policies: readonly Policy[],
    cost: number,
    receipts?: readonly (number | undefined)[],
  ): void
  release(key: string, policy: Policy, lease: Lease): void
  get(key: string, policies: readonly Policy[]): readonly PolicyResult[]
  reset(key: string, policies?: readonly Policy[]): void
  resetAll(): void
  /** Keys holding time-based state, summed over policies (each keeps at most `maxKeys`). */
  readonly size: number
  /** Concurrency permits currently held, over all keys. */
  readonly inFlight: number
}

/** lru-cache allocates its index for `max` keys at once; beyond this it would be gigabytes. */
const MAX_KEYS = 10_000_000

interface HeldSlots {
  readonly limiter: ConcurrencyLimiter
  readonly leases: Set<string>
}

/** A key's penalty state under one policy: refusals counted since `since`, blocked until `until`. */
interface Strikes {
  count: number
  since: number
  until: number
}

const isConcurrency = (policy: Policy) => policy.spec.algorithm === 'concurrency'

/**
 * The time one store operation sees. The store reads the real clock once per operation
 * and every limiter and TTL check inside it reads this copy: one clock read per decision
 * (most of a decision's cost), and one consistent instant for all of a request's policies.
 */
class OperationClock implements Clock {
  time = 0
  readonly #source: Clock

  constructor(source: Clock) {
    this.#source = source
  }

  now(): number {
    return this.time
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.#source.sleep(ms, signal)
  }
}

/**
 * One time-based policy's keys. Compact policies (token bucket, leaky bucket, fixed
 * window) keep one number per key and decide with a single shared limiter; the others
 * keep a limiter per key. A policy with a penalty also keeps each refused key's strikes.
 */
class PolicyTable {
  readonly policy: Policy
  readonly #spec: NormalizedRateSpec
  readonly #compact: CompactRateLimiter | undefined
  readonly #clock: OperationClock
  readonly #entries: LRUCache<string, number | RateLimiter>
  readonly #strikes: LRUCache<string, Strikes> | undefined
  /** A warm-up limiter's state is its age, so a recreated one would start cold again. */
  readonly #ageless: boolean

  constructor(policy: Policy, clock: OperationClock, maxKeys: number, origin: number) {
    this.policy = policy
    this.#spec = policy.spec as NormalizedRateSpec
    this.#clock = clock
    const shared = createLimiter(this.#spec, clock)
    this.#compact = isCompact(shared) ? shared : undefined
    this.#ageless = policy.spec.algorithm === 'warm-up'
    // TTLs are measured on the limiters' clock. lru-cache reads a start time of 0 as
    // "no TTL", so times are shifted to start at 1. A positive ttlResolution would cache
    // now() behind a setTimeout: no timers here.
    const perf = { now: () => clock.time - origin + 1 }
    this.#entries = new LRUCache<string, number | RateLimiter>({
      max: maxKeys,
      ttlResolution: 0,
      perf,
    })
    this.#strikes =
      policy.block === undefined
        ? undefined
        : new LRUCache<string, Strikes>({ max: maxKeys, ttlResolution: 0, perf })
  }

  get size(): number {
    return this.#entries.size
  }

  /** The key's limiter, loaded with its state (fresh when the key is unknown or expired). */
  load(key: string): RateLimiter {
    const limiter = this.loadKnown(key)
    if (limiter !== undefined) return limiter
    const compact = this.#compact
    if (compact !== undefined) {
      compact.loadState(compact.freshState)
      return compact
    }
    const fresh = createLimiter(this.#spec, this.#clock)
    // Stored at once: a warm-up limiter's age counts from its first sight.
    if (this.#ageless) this.#entries.set(key, fresh, { ttl: 0 })
    return fresh
  }

  /**
   * The key's limiter loaded with its state, or `undefined` when the key has none. Reading
   * through the LRU drops an expired entry, so it no longer counts toward `size`.
   */
  loadKnown(key: string): RateLimiter | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined || typeof entry !== 'number') return entry
    this.#compact!.loadState(entry)
    return this.#compact
  }

  /**
   * Stores what `load` returned after a change, with a TTL equal to the time until the
   * limiter is fresh again, so the entry can only expire once expiry loses nothing.
   */
  save(key: string, limiter: RateLimiter): void {
    if (this.#ageless) {
      this.#entries.set(key, limiter, { ttl: 0 })
      return
    }
    // lru-cache wants a positive integer; 0 would mean "never expires".
    const ttl = Math.max(1, Math.ceil(limiter.resetMs()))
    const compact = this.#compact
    this.#entries.set(key, compact === undefined ? limiter : compact.saveState(), { ttl })
  }

  /** Milliseconds the key stays blocked (0: not blocked). */
  blockedFor(key: string): number {
    const strikes = this.#strikes?.get(key)
    if (strikes === undefined) return 0
    const left = strikes.until - this.#clock.time
    return Math.max(left, 0)
  }

  /**
   * Counts a refusal against the key's penalty: the `after`th refusal within one window
   * of the first starts a block. Returns the block's length, or 0.
   */
  strike(key: string, block: Penalty): number {
    const strikes = this.#strikes!
    const now = this.#clock.time
    let state = strikes.get(key)
    if (state === undefined || now - state.since >= this.policy.windowMs) {
      state = { count: 0, since: now, until: 0 }
    }
    state.count++
    if (state.count >= block.after) {
      state.count = 0
      state.since = now
      state.until = now + block.forMs
    }
    // Kept while it can still matter: until the block ends or the strikes' window closes.
    const ttl = Math.max(state.until, state.since + this.policy.windowMs) - now
    strikes.set(key, state, { ttl: Math.max(1, Math.ceil(ttl)) })
    return state.until > now ? block.forMs : 0
  }

  delete(key: string): void {
    this.#entries.delete(key)
    this.#strikes?.delete(key)
  }
}

/**
 * Keeps per-key limiter state in this process: per policy, an LRU (`lru-cache`) bounded by
 * `maxKeys`, with no timers.
 *
 * - Token bucket, leaky bucket and fixed window keep one number per key (a few dozen bytes
 *   with the LRU's bookkeeping); sliding window and warm-up keep a limiter per key.
 * - An entry expires (by TTL, checked on access) only once its limiter is back to fresh,
 *   so expiry never hands out extra permits. Warm-up entries never expire by TTL: their
 *   state is their age.
 * - Concurrency slots live outside the LRU and only while held, so a key with requests in
 *   flight is never dropped, and their memory is bounded by the requests in flight.
 * - When a policy's LRU is full, a new key evicts the least recently used one and that key
 *   starts over with a fresh budget. A hot key is used constantly, so it stays at the
 *   recent end and is only evicted if more than `maxKeys` other keys arrive between two of
 *   its requests. Size `maxKeys` above the distinct clients you expect within one window.
 * - Policies are kept apart by name and spec: two middlewares whose policies differ never
 *   share state, whatever their names.
 *
 * @example
 * ```ts
 * const store = memoryStore({ maxKeys: 50_000 })
 * app.use(rateLimit({ limit: 100, window: '1m', store }))
 * ```
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const factory = 'memoryStore'
  readOptions(factory, options, ['maxKeys', 'clock'])
  const maxKeys =
    options.maxKeys === undefined
      ? 100_000
      : readPositiveInteger(factory, 'maxKeys', options.maxKeys)
  if (maxKeys > MAX_KEYS) {
    throw new RangeError(`${factory}: "maxKeys" must be at most ${MAX_KEYS}, got ${maxKeys}`)
  }
  return new InMemoryStore(maxKeys, readClock(factory, 'clock', options.clock))
}

class InMemoryStore implements MemoryStore {
  readonly #source: Clock
  readonly #clock: OperationClock
  readonly #origin: number
  readonly #maxKeys: number
  readonly #tables = new Map<string, PolicyTable>()
  readonly #held = new Map<string, Map<string, HeldSlots>>()
  #inFlight = 0
  #leaseSeq = 0

  constructor(maxKeys: number, clock: Clock) {
    this.#source = clock
    this.#clock = new OperationClock(clock)
    this.#origin = clock.now()
    this.#maxKeys = maxKeys
  }

  get size(): number {
    let size = 0
    for (const table of this.#tables.values()) size += table.size
    return size
  }

  get inFlight(): number {
    return this.#inFlight
  }

  take(key: string, policies: readonly Policy[], cost: number): TakeResult {
    if (policies.length === 1) return this.#takeOne(key, policies[0]!, cost)
    // Tables first: making one allocates the LRU, which must not happen between reading
    // the clock and deciding.
    const tables = policies.map((policy) =>
      isConcurrency(policy) ? undefined : this.#table(policy),
    )
    this.#clock.time = this.#source.now()
    // Each policy has its own table (and compact limiter), so all can be loaded at once.
    const limiters = policies.map((policy, i) =>
      tables[i] === undefined ? this.#slots(key, policy).limiter : tables[i].load(key),
    )
    const blocked = tables.map((table) => table?.blockedFor(key) ?? 0)
    // Single-threaded: check every policy first, then take from all; nothing can change
    // in between, so a rejection normally has nothing to undo.
    const admits = limiters.map(
      (limiter, i) => blocked[i] === 0 && limiter.availablePermits() >= cost,
    )
    let allowed = admits.every(Boolean)
    const leases: (Lease | undefined)[] = []
    const receipts: (number | undefined)[] = []
    if (allowed) {
      let taken = 0
      while (taken < policies.length && limiters[taken]!.tryAcquire(cost)) {
        const policy = policies[taken]!
        const limiter = limiters[taken]!
        leases.push(isConcurrency(policy) ? this.#lease(key, policy, cost) : undefined)
        receipts.push(isConcurrency(policy) ? undefined : (limiter as RateLimiter).receipt())
        taken++
      }
      if (taken < policies.length) {
        // A limiter refused what availablePermits promised (float edge): undo the others.
        admits[taken] = false
        allowed = false
        for (let i = 0; i < taken; i++) {
          const lease = leases[i]
          if (lease === undefined) (limiters[i] as RateLimiter).refund(cost)
          else this.release(key, policies[i]!, lease)
        }
        leases.length = 0
        receipts.length = 0
      } else {
        for (let i = 0; i < policies.length; i++) tables[i]?.save(key, limiters[i] as RateLimiter)
      }
    }
    if (!allowed) {
      for (let i = 0; i < policies.length; i++) {
        const block = policies[i]!.block
        if (!admits[i] && block !== undefined && blocked[i] === 0) {
          blocked[i] = tables[i]!.strike(key, block)
        }
      }
    }
    this.#dropIdleSlots(key, policies)
    return {
      allowed,
      results: policies.map((policy, i) =>
        this.#result(
          policy,
          limiters[i]!,
          admits[i]!,
          allowed,
          cost,
          blocked[i]!,
          leases[i],
          receipts[i],
        ),
      ),
    }
  }

  #takeOne(key: string, policy: Policy, cost: number): TakeResult {
    if (isConcurrency(policy)) {
      const slots = this.#slots(key, policy)
      const allowed = slots.limiter.tryAcquire(cost)
      const lease = allowed ? this.#lease(key, policy, cost) : undefined
      if (!allowed) this.#dropIdleSlots(key, [policy])
      return {
        allowed,
        results: [this.#result(policy, slots.limiter, allowed, allowed, cost, 0, lease, undefined)],
      }
    }
    const table = this.#table(policy)
    this.#clock.time = this.#source.now()
    const limiter = table.load(key)
    let blocked = policy.block === undefined ? 0 : table.blockedFor(key)
    const allowed = blocked === 0 && limiter.tryAcquire(cost)
    let receipt: number | undefined
    if (allowed) {
      receipt = limiter.receipt()
      table.save(key, limiter)
    } else if (policy.block !== undefined && blocked === 0) {
      blocked = table.strike(key, policy.block)
    }
    return {
      allowed,
      results: [this.#result(policy, limiter, allowed, allowed, cost, blocked, undefined, receipt)],
    }
  }

  refund(
    key: string,
    policies: readonly Policy[],
    cost: number,
    receipts?: readonly (number | undefined)[],
  ): void {
    const tables = policies.map((policy) =>
      isConcurrency(policy) ? undefined : this.#table(policy),
    )
    this.#clock.time = this.#source.now()
    for (let i = 0; i < policies.length; i++) {
      const table = tables[i]
      if (table === undefined) continue
      const limiter = table.loadKnown(key)
      // No entry means the key expired (it was fresh) or was evicted: nothing to give back.
      if (limiter === undefined) continue
      limiter.refund(cost, receipts?.[i])
      table.save(key, limiter)
    }
  }

  release(key: string, policy: Policy, lease: Lease): void {
    const slots = this.#held.get(key)?.get(policy.id)
    if (slots === undefined || !slots.leases.delete(lease.id)) return
    slots.limiter.release(lease.permits)
    this.#inFlight -= lease.permits
    this.#dropIdleSlots(key, [policy])
  }

  get(key: string, policies: readonly Policy[]): readonly PolicyResult[] {
    const tables = policies.map((policy) =>
      isConcurrency(policy) ? undefined : this.#table(policy),
    )
    this.#clock.time = this.#source.now()
    return policies.map((policy, i) => {
      const table = tables[i]
      const limiter =
        table === undefined
          ? (this.#held.get(key)?.get(policy.id)?.limiter ?? this.#freshSlots(policy))
          : table.load(key)
      const blocked = table?.blockedFor(key) ?? 0
      const allowed = blocked === 0 && limiter.availablePermits() >= 1
      return this.#result(policy, limiter, allowed, allowed, 1, blocked, undefined, undefined)
    })
  }

  reset(key: string, policies?: readonly Policy[]): void {
    const held = this.#held.get(key)
    if (policies === undefined) {
      for (const table of this.#tables.values()) table.delete(key)
      for (const slots of held?.values() ?? []) this.#inFlight -= slots.limiter.inFlight
      this.#held.delete(key)
      return
    }
    for (const policy of policies) {
      this.#tables.get(policy.id)?.delete(key)
      const slots = held?.get(policy.id)
      if (slots !== undefined) {
        this.#inFlight -= slots.limiter.inFlight
        held!.delete(policy.id)
      }
    }
    if (held !== undefined && held.size === 0) this.#held.delete(key)
  }

  resetAll(): void {
    this.#tables.clear()
    this.#held.clear()
    this.#inFlight = 0
  }

  /** The policy's table, made on first use. */
  #table(policy: Policy): PolicyTable {
    let table = this.#tables.get(policy.id)
    if (table === undefined) {
      table = new PolicyTable(policy, this.#clock, this.#maxKeys, this.#origin)
      this.#tables.set(policy.id, table)
    }
    return table
  }

  #freshSlots(policy: Policy): ConcurrencyLimiter {
    return createLimiter(policy.spec as { algorithm: 'concurrency'; max: number; maxQueue: number })
  }

  #slots(key: string, policy: Policy): HeldSlots {
    let byPolicy = this.#held.get(key)
    if (byPolicy === undefined) {
      byPolicy = new Map()
      this.#held.set(key, byPolicy)
    }
    let slots = byPolicy.get(policy.id)
    if (slots === undefined) {
      slots = { limiter: this.#freshSlots(policy), leases: new Set() }
      byPolicy.set(policy.id, slots)
    }
    return slots
  }

  #lease(key: string, policy: Policy, permits: number): Lease {
    const id = String(++this.#leaseSeq)
    this.#held.get(key)!.get(policy.id)!.leases.add(id)
    this.#inFlight += permits
    return { id, permits }
  }

  /** Forgets concurrency state with nothing in flight: it is fresh, so nothing is lost. */
  #dropIdleSlots(key: string, policies: readonly Policy[]): void {
    const byPolicy = this.#held.get(key)
    if (byPolicy === undefined) return
    for (const policy of policies) {
      if (byPolicy.get(policy.id)?.leases.size === 0) byPolicy.delete(policy.id)
    }
    if (byPolicy.size === 0) this.#held.delete(key)
  }

  #result(
    policy: Policy,
    limiter: RateLimiter | ConcurrencyLimiter,
    admits: boolean,
    allowed: boolean,
    cost: number,
    blockedMs: number,
    lease: Lease | undefined,
    receipt: number | undefined,
  ): PolicyResult {
    const timed = 'resetMs' in limiter
    const available = Math.max(0, limiter.availablePermits())
    let resetMs = 0
    let retryAfterMs = 0
    if (timed) {
      // Draft -10's reset: until one more permit is free; 0 when none can be (it is full).
      // A blocked key is shown 0 remaining, so its next quota is the first permit it may
      // take once the block is over, whatever its budget has refilled to meanwhile.
      const more = limiter.retryAfterMs(blockedMs > 0 ? 1 : available + 1)
      resetMs = Number.isFinite(more) ? more : 0
      // A bulkhead has no time axis: its 0 means "unknown", as in RateLimitError.
      if (!allowed) retryAfterMs = limiter.retryAfterMs(cost)
    }
    const result: {
      -readonly [K in keyof PolicyResult]: PolicyResult[K]
    } = {
      policy,
      allowed: admits,
      limit: policy.limit,
      remaining: blockedMs > 0 ? 0 : available,
      resetMs: Math.max(blockedMs, resetMs),
      retryAfterMs: Math.max(blockedMs, retryAfterMs),
    }
    if (blockedMs > 0) result.blocked = true
    if (lease !== undefined) result.lease = lease
    if (receipt !== undefined) result.receipt = receipt
    return result
  }
}
