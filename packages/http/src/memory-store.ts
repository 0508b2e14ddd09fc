import {
  type Clock,
  type ConcurrencyLimiter,
  createLimiter,
  type RateLimiter,
  systemClock,
} from '@sluice/core'
import { LRUCache } from 'lru-cache'
import type { Lease, Policy, PolicyResult, Store, TakeResult } from './store'
import { describe, positiveInteger } from './validate'

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** Most client keys kept with time-based state (an LRU). Default 100,000. */
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
  /** Client keys holding time-based state (at most `maxKeys`). */
  readonly size: number
  /** Concurrency permits currently held, over all keys. */
  readonly inFlight: number
}

interface TimedEntry {
  readonly limiters: Map<string, RateLimiter>
  /** A warm-up limiter's state is its age, so a recreated one would start cold again. */
  ageless: boolean
}

interface HeldSlots {
  readonly limiter: ConcurrencyLimiter
  readonly leases: Set<string>
}

const isConcurrency = (policy: Policy) => policy.spec.algorithm === 'concurrency'

/**
 * Keeps per-key limiters in this process: an LRU (`lru-cache`) of limiters created lazily
 * from each policy's spec, bounded by `maxKeys`, with no timers.
 *
 * - An entry expires (by TTL, checked on access) only once every limiter in it is back to
 *   fresh, so expiry never hands out extra permits. Warm-up entries never expire by TTL:
 *   their state is their age.
 * - Concurrency slots live outside the LRU and only while held, so a key with requests in
 *   flight is never dropped, and their memory is bounded by the requests in flight.
 * - When the LRU is full, a new key evicts the least recently used one and that key starts
 *   over with a fresh budget. A hot key is used constantly, so it stays at the recent end
 *   and is only evicted if more than `maxKeys` other keys arrive between two of its
 *   requests: a flood of spoofed keys cannot push out a client that keeps talking unless
 *   it outpaces that client by `maxKeys` to one. Size `maxKeys` above the distinct clients
 *   you expect within one window.
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
  readonly #clock: Clock
  readonly #timed: LRUCache<string, TimedEntry>
  readonly #held = new Map<string, Map<string, HeldSlots>>()
  #inFlight = 0
  #leaseSeq = 0

  constructor(maxKeys: number, clock: Clock) {
    this.#clock = clock
    const origin = clock.now()
    this.#timed = new LRUCache<string, TimedEntry>({
      max: maxKeys,
      // A positive ttlResolution would cache now() behind a setTimeout: no timers here.
      ttlResolution: 0,
      // TTLs are measured on the limiters' clock. lru-cache reads a start time of 0 as
      // "no TTL", so times are shifted to start at 1.
      perf: { now: () => clock.now() - origin + 1 },
    })
  }

  get size(): number {
    return this.#timed.size
  }

  get inFlight(): number {
    return this.#inFlight
  }

  take(key: string, policies: readonly Policy[], cost: number): TakeResult {
    if (policies.length === 1) return this.#takeOne(key, policies, cost)
    const entry = this.#entry(key, policies)
    const limiters = policies.map((policy) =>
      isConcurrency(policy) ? this.#slots(key, policy).limiter : this.#limiter(entry!, policy),
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
      } else if (entry !== undefined) {
        this.#touch(key, entry)
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

  #takeOne(key: string, policies: readonly Policy[], cost: number): TakeResult {
    const policy = policies[0]!
    if (isConcurrency(policy)) {
      const slots = this.#slots(key, policy)
      const allowed = slots.limiter.tryAcquire(cost)
      const lease = allowed ? this.#lease(key, policy, cost) : undefined
      if (!allowed) this.#dropIdleSlots(key, policies)
      return {
        allowed,
        results: [this.#result(policy, slots.limiter, allowed, allowed, cost, lease)],
      }
    }
    const entry = this.#timed.get(key) ?? { limiters: new Map(), ageless: false }
    const limiter = this.#limiter(entry, policy)
    const allowed = limiter.tryAcquire(cost)
    if (allowed) this.#touch(key, entry)
    return { allowed, results: [this.#result(policy, limiter, allowed, allowed, cost, undefined)] }
  }

  refund(key: string, policies: readonly Policy[], cost: number): void {
    const entry = this.#timed.get(key)
    // No entry means the key expired (it was fresh) or was evicted: nothing to give back.
    if (entry === undefined) return
    for (const policy of policies) {
      if (!isConcurrency(policy)) entry.limiters.get(policy.name)?.refund(cost)
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
    const entry = this.#timed.peek(key)
    return policies.map((policy) => {
      const limiter = isConcurrency(policy)
        ? (this.#held.get(key)?.get(policy.name)?.limiter ?? this.#fresh(policy))
        : (entry?.limiters.get(policy.name) ?? this.#fresh(policy))
      const allowed = limiter.availablePermits() >= 1
      return this.#result(policy, limiter, allowed, allowed, 1, undefined)
    })
  }

  reset(key: string, policies?: readonly Policy[]): void {
    const held = this.#held.get(key)
    if (policies === undefined) {
      this.#timed.delete(key)
      for (const slots of held?.values() ?? []) this.#inFlight -= slots.limiter.inFlight
      this.#held.delete(key)
      return
    }
    const entry = this.#timed.peek(key)
    for (const policy of policies) {
      entry?.limiters.delete(policy.name)
      const slots = held?.get(policy.name)
      if (slots !== undefined) {
        this.#inFlight -= slots.limiter.inFlight
        held!.delete(policy.name)
      }
    }
    if (entry !== undefined && entry.limiters.size === 0) this.#timed.delete(key)
    if (held !== undefined && held.size === 0) this.#held.delete(key)
  }

  /** The key's entry (created, not yet stored, when missing or expired), if any policy is timed. */
  #entry(key: string, policies: readonly Policy[]): TimedEntry | undefined {
    if (!policies.some((policy) => !isConcurrency(policy))) return undefined
    return this.#timed.get(key) ?? { limiters: new Map(), ageless: false }
  }

  #limiter(entry: TimedEntry, policy: Policy): RateLimiter {
    let limiter = entry.limiters.get(policy.name)
    if (limiter === undefined) {
      limiter = this.#fresh(policy) as RateLimiter
      entry.limiters.set(policy.name, limiter)
      if (policy.spec.algorithm === 'warm-up') entry.ageless = true
    }
    return limiter
  }

  #fresh(policy: Policy): RateLimiter | ConcurrencyLimiter {
    return createLimiter(policy.spec, this.#clock) as RateLimiter | ConcurrencyLimiter
  }

  /**
   * Stores the entry after a take with a TTL equal to the time until every limiter in it
   * is fresh again, so it can only expire once expiry loses nothing.
   */
  #touch(key: string, entry: TimedEntry): void {
    let ttl = 0
    if (!entry.ageless) {
      for (const limiter of entry.limiters.values()) ttl = Math.max(ttl, limiter.resetMs())
      // lru-cache wants a positive integer; 0 would mean "never expires".
      ttl = Math.max(1, Math.ceil(ttl))
    }
    this.#timed.set(key, entry, { ttl })
  }

  #slots(key: string, policy: Policy): HeldSlots {
    let byPolicy = this.#held.get(key)
    if (byPolicy === undefined) {
      byPolicy = new Map()
      this.#held.set(key, byPolicy)
    }
    let slots = byPolicy.get(policy.name)
    if (slots === undefined) {
      slots = { limiter: this.#fresh(policy) as ConcurrencyLimiter, leases: new Set() }
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
