import {
  type Clock,
  type CompactRateLimiter,
  type ConcurrencyLimiter,
  createLimiter,
  isCompact,
  type RateLimiter,
  type RateLimiterSpec,
  systemClock,
} from '@sluice/core'
import { LRUCache } from 'lru-cache'
import type { Lease, Policy, PolicyResult, Store, TakeResult } from './store'
import { describe, positiveInteger } from './validate'

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** Most client keys each time-based policy keeps state for (an LRU). Default 100,000. */
  maxKeys?: number
  /** Time source for the limiters (pass a `ManualClock` in tests). Default `systemClock`. */
  clock?: Clock
}

/** The in-process store: every method answers synchronously. */
export interface MemoryStore extends Store {
  take(key: string, policies: readonly Policy[], cost: number): TakeResult
  refund(key: string, policies: readonly Policy[], cost: number): void
  release(key: string, policy: Policy, lease: Lease): void
  get(key: string, policies: readonly Policy[]): readonly PolicyResult[]
  reset(key: string, policies?: readonly Policy[]): void
  /** Keys holding time-based state, summed over policies (each keeps at most `maxKeys`). */
  readonly size: number
  /** Concurrency permits currently held, over all keys. */
  readonly inFlight: number
}

interface HeldSlots {
  readonly limiter: ConcurrencyLimiter
  readonly leases: Set<string>
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
 * keep a limiter per key.
 */
class PolicyTable {
  readonly policy: Policy
  readonly #spec: string
  readonly #twins = new WeakSet<Policy>()
  readonly #compact: CompactRateLimiter | undefined
  readonly #clock: Clock
  readonly #entries: LRUCache<string, number | RateLimiter>
  /** A warm-up limiter's state is its age, so a recreated one would start cold again. */
  readonly #ageless: boolean

  constructor(policy: Policy, clock: OperationClock, maxKeys: number, origin: number) {
    this.policy = policy
    this.#spec = JSON.stringify(policy.spec)
    this.#clock = clock
    const shared = createLimiter(policy.spec as RateLimiterSpec, clock)
    this.#compact = isCompact(shared) ? shared : undefined
    this.#ageless = policy.spec.algorithm === 'warm-up'
    this.#entries = new LRUCache<string, number | RateLimiter>({
      max: maxKeys,
      // A positive ttlResolution would cache now() behind a setTimeout: no timers here.
      ttlResolution: 0,
      // TTLs are measured on the limiters' clock. lru-cache reads a start time of 0 as
      // "no TTL", so times are shifted to start at 1.
      perf: { now: () => clock.time - origin + 1 },
    })
  }

  get size(): number {
    return this.#entries.size
  }

  /** Whether `policy` is the one this table was made for (same name, same spec). */
  accepts(policy: Policy): boolean {
    if (policy === this.policy || this.#twins.has(policy)) return true
    // Another middleware compiled the same options: compare once, then remember it.
    if (JSON.stringify(policy.spec) !== this.#spec) return false
    this.#twins.add(policy)
    return true
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
    const fresh = createLimiter(this.policy.spec as RateLimiterSpec, this.#clock)
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

  delete(key: string): void {
    this.#entries.delete(key)
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
 *   its requests: a flood of spoofed keys cannot push out a client that keeps talking
 *   unless it outpaces that client by `maxKeys` to one. Size `maxKeys` above the distinct
 *   clients you expect within one window.
 * - Policies are told apart by name: two different specs under one name in one store are
 *   refused with a TypeError.
 *
 * @example
 * ```ts
 * const store = memoryStore({ maxKeys: 50_000 })
 * app.use(rateLimit({ limit: 100, window: '1m', store }))
 * ```
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`memoryStore: options must be an object, got ${describe(options)}`)
  }
  const maxKeys = positiveInteger('memoryStore', 'maxKeys', options.maxKeys ?? 100_000)
  const clock = options.clock ?? systemClock
  if (typeof clock !== 'object' || typeof clock.now !== 'function') {
    throw new TypeError(`memoryStore: "clock" must be an object with now(), got ${describe(clock)}`)
  }
  return new InMemoryStore(maxKeys, clock)
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
    this.#clock.time = this.#source.now()
    if (policies.length === 1) return this.#takeOne(key, policies[0]!, cost)
    const tables = policies.map((policy) =>
      isConcurrency(policy) ? undefined : this.#table(policy),
    )
    // Each policy has its own table (and compact limiter), so all can be loaded at once.
    const limiters = policies.map((policy, i) =>
      isConcurrency(policy) ? this.#slots(key, policy).limiter : tables[i]!.load(key),
    )
    // Single-threaded: check every policy first, then take from all; nothing can change
    // in between, so a rejection normally has nothing to undo.
    const admits = limiters.map((limiter) => limiter.availablePermits() >= cost)
    let allowed = admits.every(Boolean)
    const leases: (Lease | undefined)[] = []
    if (allowed) {
      let taken = 0
      while (taken < policies.length && limiters[taken]!.tryAcquire(cost)) {
        const policy = policies[taken]!
        leases.push(isConcurrency(policy) ? this.#lease(key, policy, cost) : undefined)
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
      } else {
        for (let i = 0; i < policies.length; i++) {
          tables[i]?.save(key, limiters[i] as RateLimiter)
        }
      }
    }
    this.#dropIdleSlots(key, policies)
    return {
      allowed,
      results: policies.map((policy, i) =>
        this.#result(policy, limiters[i]!, admits[i]!, allowed, cost, leases[i]),
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
        results: [this.#result(policy, slots.limiter, allowed, allowed, cost, lease)],
      }
    }
    const table = this.#table(policy)
    const limiter = table.load(key)
    const allowed = limiter.tryAcquire(cost)
    if (allowed) table.save(key, limiter)
    return { allowed, results: [this.#result(policy, limiter, allowed, allowed, cost, undefined)] }
  }

  refund(key: string, policies: readonly Policy[], cost: number): void {
    this.#clock.time = this.#source.now()
    for (const policy of policies) {
      if (isConcurrency(policy)) continue
      const table = this.#table(policy)
      const limiter = table.loadKnown(key)
      // No entry means the key expired (it was fresh) or was evicted: nothing to give back.
      if (limiter === undefined) continue
      limiter.refund(cost)
      table.save(key, limiter)
    }
  }

  release(key: string, policy: Policy, lease: Lease): void {
    const slots = this.#held.get(key)?.get(policy.name)
    if (slots === undefined || !slots.leases.delete(lease.id)) return
    slots.limiter.release(lease.permits)
    this.#inFlight -= lease.permits
    this.#dropIdleSlots(key, [policy])
  }

  get(key: string, policies: readonly Policy[]): readonly PolicyResult[] {
    this.#clock.time = this.#source.now()
    return policies.map((policy) => {
      const limiter = isConcurrency(policy)
        ? (this.#held.get(key)?.get(policy.name)?.limiter ?? this.#freshSlots(policy))
        : this.#table(policy).load(key)
      const allowed = limiter.availablePermits() >= 1
      return this.#result(policy, limiter, allowed, allowed, 1, undefined)
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
      this.#tables.get(policy.name)?.delete(key)
      const slots = held?.get(policy.name)
      if (slots !== undefined) {
        this.#inFlight -= slots.limiter.inFlight
        held!.delete(policy.name)
      }
    }
    if (held !== undefined && held.size === 0) this.#held.delete(key)
  }

  /** The policy's table, made on first use; a different spec under a known name is refused. */
  #table(policy: Policy): PolicyTable {
    const table = this.#tables.get(policy.name)
    if (table !== undefined) {
      if (table.accepts(policy)) return table
      throw new TypeError(
        `memoryStore: two different policies are named "${policy.name}"; give each policy sharing a store its own name`,
      )
    }
    const made = new PolicyTable(policy, this.#clock, this.#maxKeys, this.#origin)
    this.#tables.set(policy.name, made)
    return made
  }

  #freshSlots(policy: Policy): ConcurrencyLimiter {
    return createLimiter(policy.spec, this.#clock) as ConcurrencyLimiter
  }

  #slots(key: string, policy: Policy): HeldSlots {
    let byPolicy = this.#held.get(key)
    if (byPolicy === undefined) {
      byPolicy = new Map()
      this.#held.set(key, byPolicy)
    }
    let slots = byPolicy.get(policy.name)
    if (slots === undefined) {
      slots = { limiter: this.#freshSlots(policy), leases: new Set() }
      byPolicy.set(policy.name, slots)
    }
    return slots
  }

  #lease(key: string, policy: Policy, permits: number): Lease {
    const id = String(++this.#leaseSeq)
    this.#held.get(key)!.get(policy.name)!.leases.add(id)
    this.#inFlight += permits
    return { id, permits }
  }

  /** Forgets concurrency state with nothing in flight: it is fresh, so nothing is lost. */
  #dropIdleSlots(key: string, policies: readonly Policy[]): void {
    const byPolicy = this.#held.get(key)
    if (byPolicy === undefined) return
    for (const policy of policies) {
      if (byPolicy.get(policy.name)?.leases.size === 0) byPolicy.delete(policy.name)
    }
    if (byPolicy.size === 0) this.#held.delete(key)
  }

  #result(
    policy: Policy,
    limiter: RateLimiter | ConcurrencyLimiter,
    admits: boolean,
    allowed: boolean,
    cost: number,
    lease: Lease | undefined,
  ): PolicyResult {
    const timed = 'resetMs' in limiter
    const result: PolicyResult = {
      policy,
      allowed: admits,
      limit: policy.limit,
      remaining: Math.max(0, limiter.availablePermits()),
      resetMs: timed ? limiter.resetMs() : 0,
      // A bulkhead has no time axis: 0 means "unknown", as in RateLimitError.
      retryAfterMs: allowed || !timed ? 0 : limiter.retryAfterMs(cost),
    }
    return lease === undefined ? result : { ...result, lease }
  }
}
