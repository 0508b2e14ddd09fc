import { type Clock, createLimiter, type NormalizedSpec } from '@sluice/core'
import { isPortable, type PortableRateLimiter } from '@sluice/core/internal'
import type { Penalty, Policy } from './store'
import { countStrike } from './strikes'

/**
 * What of a policy a store needs to decide on state kept as data: the fields that make
 * its state (`Policy` has them all).
 */
export type StoredPolicy = Pick<Policy, 'id' | 'spec' | 'windowMs' | 'block'>

/** A time-based policy's state for one key: the limiter's and the penalty's. */
export interface RateRecord {
  /** `exportState()` of the key's limiter (may hold `-Infinity`: keep it as a structured clone). */
  readonly state: readonly number[]
  /** Refusals counted since `since`, blocked until `until` (penalty only). */
  readonly strikes?: Strikes
}

/** A penalty's count of refusals, and the end of the block it started (0: none). */
export interface Strikes {
  readonly count: number
  readonly since: number
  readonly until: number
}

/** A concurrency policy's state for one key: the slots held, each until it expires. */
export interface SlotsRecord {
  readonly leases: readonly StoredLease[]
}

/** A held slot: expires at `expiresAt` if nobody releases it (its holder died). */
export interface StoredLease {
  readonly id: string
  readonly permits: number
  readonly expiresAt: number
}

/** One policy's state for one key, as a store keeps it; undefined when the key is fresh. */
export type StoredRecord = RateRecord | SlotsRecord

/** One policy's result, as `PolicyResult` without the policy. */
export interface StoredResult {
  readonly allowed: boolean
  readonly remaining: number
  readonly resetMs: number
  /** 0 when allowed; Infinity for never. */
  readonly retryAfterMs: number
  readonly lease?: { readonly id: string; readonly permits: number }
  readonly receipt?: number
  readonly blocked?: true
}

/** A record to write back: `record` undefined means delete it. */
export interface StoredChange {
  readonly index: number
  readonly record: StoredRecord | undefined
  /**
   * Milliseconds until the record is fresh again, when it may go (a storage's expiry);
   * undefined for a warm-up record, whose state is its age and is kept.
   */
  readonly freshInMs?: number
}

/** The time of one operation: every limiter in it reads the same instant. */
class FixedClock implements Clock {
  readonly #now: number

  constructor(now: number) {
    this.#now = now
  }

  now(): number {
    return this.#now
  }

  sleep(): Promise<void> {
    return Promise.reject(new Error('sluice: a stored limiter never waits'))
  }
}

const sameStrikes = (a: Strikes | undefined, b: Strikes | undefined) =>
  a === b || (a?.count === b?.count && a?.since === b?.since && a?.until === b?.until)

/** A time-based policy's state for one key during an operation. */
class RateEntry {
  readonly limiter: PortableRateLimiter
  strikes: Strikes | undefined
  readonly #policy: StoredPolicy
  readonly #loaded: RateRecord | undefined

  constructor(policy: StoredPolicy, clock: Clock, record: RateRecord | undefined) {
    this.#policy = policy
    const limiter = createLimiter(policy.spec, clock)
    if (!isPortable(limiter)) throw new TypeError(`not a rate algorithm: ${policy.spec.algorithm}`)
    if (record !== undefined) limiter.importState(record.state)
    this.limiter = limiter
    this.strikes = record?.strikes
    this.#loaded = record
  }

  get known(): boolean {
    return this.#loaded !== undefined
  }

  /** Milliseconds the key stays blocked by the penalty at `now` (0: not blocked). */
  blockedFor(now: number): number {
    return Math.max((this.strikes?.until ?? 0) - now, 0)
  }

  /**
   * Counts a refusal: the `after`th within one window of the first starts a block (the
   * memory store's rule). Returns the block's length, or 0.
   */
  strike(now: number, block: Penalty): number {
    const strikes = { ...(this.strikes ?? { count: 0, since: now, until: 0 }) }
    countStrike(strikes, block, this.#policy.windowMs, now)
    this.strikes = strikes
    return strikes.until > now ? block.forMs : 0
  }

  /** Milliseconds until the record is worth nothing; undefined for warm-up (never). */
  freshIn(now: number): number | undefined {
    if (this.#policy.spec.algorithm === 'warm-up') return undefined
    const strikes = this.strikes
    const penalty =
      strikes === undefined
        ? 0
        : Math.max(strikes.until, strikes.since + this.#policy.windowMs) - now
    return Math.max(this.limiter.resetMs(), penalty, 0)
  }

  /** What to keep: undefined once nothing is worth keeping (the key is fresh). */
  record(now: number): RateRecord | undefined {
    const strikes =
      this.strikes !== undefined &&
      Math.max(this.strikes.until, this.strikes.since + this.#policy.windowMs) > now
        ? this.strikes
        : undefined
    // A warm-up limiter's state is its age: forgetting it would start the key cold again.
    const fresh = this.#policy.spec.algorithm !== 'warm-up' && this.limiter.resetMs() === 0
    if (fresh && strikes === undefined) return undefined
    return strikes === undefined
      ? { state: this.limiter.exportState() }
      : { state: this.limiter.exportState(), strikes }
  }

  /** Whether `record` differs from what was loaded. */
  changed(record: RateRecord | undefined): boolean {
    const loaded = this.#loaded
    if (record === undefined || loaded === undefined) return record !== loaded
    const { state } = record
    return (
      state.length !== loaded.state.length ||
      state.some((value, i) => !Object.is(value, loaded.state[i])) ||
      !sameStrikes(record.strikes, loaded.strikes)
    )
  }
}

/** A concurrency policy's state for one key during an operation: the leases still alive. */
class SlotsEntry {
  leases: StoredLease[]
  readonly max: number
  readonly #loaded: SlotsRecord | undefined

  constructor(spec: NormalizedSpec, record: SlotsRecord | undefined, now: number) {
    this.max = spec.algorithm === 'concurrency' ? spec.max : 0
    this.leases = (record?.leases ?? []).filter((lease) => lease.expiresAt > now)
    this.#loaded = record
  }

  get available(): number {
    let held = 0
    for (const lease of this.leases) held += lease.permits
    return Math.max(this.max - held, 0)
  }

  record(): SlotsRecord | undefined {
    return this.leases.length === 0 ? undefined : { leases: this.leases }
  }

  /** Milliseconds until the last lease expires. */
  freshIn(now: number): number {
    let last = now
    for (const lease of this.leases) last = Math.max(last, lease.expiresAt)
    return last - now
  }

  /** Whether a lease was taken, released or found expired since the record was loaded. */
  changed(): boolean {
    const loaded = this.#loaded?.leases ?? []
    return (
      this.leases.length !== loaded.length ||
      this.leases.some((lease, i) => lease.id !== loaded[i]!.id)
    )
  }
}

type Entry = RateEntry | SlotsEntry

/**
 * One operation on one key's state kept as data, for stores that keep it outside this
 * process (a Durable Object's storage, Deno KV): load the key's records, make a
 * `StoredState` at one instant, decide, then write back `changes()`. It decides exactly
 * as `memoryStore()` does: the same `@sluice/core` limiters (their state exported and
 * imported), penalties, refund receipts, and concurrency slots as leases that expire.
 * Each record carries its own times, so one read late or past a storage's expiry is still
 * right: old state is simply fresh.
 *
 * @example
 * ```ts
 * const state = new StoredState(policies, await load(key, policies), Date.now())
 * const taken = state.take(cost, 60_000)
 * for (const { index, record } of state.changes()) await save(key, policies[index], record)
 * ```
 */
export class StoredState {
  readonly #policies: readonly StoredPolicy[]
  readonly #entries: Entry[]
  readonly #now: number

  constructor(
    policies: readonly StoredPolicy[],
    records: readonly (StoredRecord | undefined)[],
    now: number,
  ) {
    const clock = new FixedClock(now)
    this.#policies = policies
    this.#now = now
    this.#entries = policies.map((policy, i) =>
      policy.spec.algorithm === 'concurrency'
        ? new SlotsEntry(policy.spec, records[i] as SlotsRecord | undefined, now)
        : new RateEntry(policy, clock, records[i] as RateRecord | undefined),
    )
  }

  /**
   * Takes `cost` permits from every policy, or from none (`Store.take`). A concurrency
   * policy's slot is a lease held until released, or for `leaseTtlMs` at most.
   */
  take(cost: number, leaseTtlMs: number): { allowed: boolean; results: StoredResult[] } {
    const entries = this.#entries
    const now = this.#now
    const blocked = entries.map((entry) => (entry instanceof RateEntry ? entry.blockedFor(now) : 0))
    const admits = entries.map(
      (entry, i) =>
        blocked[i] === 0 &&
        (entry instanceof RateEntry ? entry.limiter.availablePermits() : entry.available) >= cost,
    )
    let allowed = admits.every(Boolean)
    const leases: (StoredLease | undefined)[] = []
    const receipts: (number | undefined)[] = []
    if (allowed) {
      const before = entries.map((entry) =>
        entry instanceof RateEntry ? entry.limiter.exportState() : undefined,
      )
      for (const [i, entry] of entries.entries()) {
        if (entry instanceof SlotsEntry) {
          // Random: ids must stay unique across every holder and restart of the store.
          const lease = { id: crypto.randomUUID(), permits: cost, expiresAt: now + leaseTtlMs }
          entry.leases.push(lease)
          leases.push(lease)
          receipts.push(undefined)
        } else if (entry.limiter.tryAcquire(cost)) {
          leases.push(undefined)
          receipts.push(entry.limiter.receipt())
        } else {
          // A limiter refused what availablePermits promised (float edge): undo the others.
          admits[i] = false
          allowed = false
          break
        }
      }
      if (!allowed) {
        for (const [i, entry] of entries.entries()) {
          if (entry instanceof RateEntry) entry.limiter.importState(before[i]!)
          else entry.leases = entry.leases.filter((lease) => !leases.includes(lease))
        }
        leases.length = 0
        receipts.length = 0
      }
    }
    if (!allowed) {
      for (const [i, entry] of entries.entries()) {
        const block = this.#policies[i]!.block
        if (!admits[i] && block !== undefined && blocked[i] === 0 && entry instanceof RateEntry) {
          blocked[i] = entry.strike(now, block)
        }
      }
    }
    return {
      allowed,
      results: entries.map((entry, i) =>
        result(entry, admits[i]!, allowed, cost, blocked[i]!, leases[i], receipts[i]),
      ),
    }
  }

  /**
   * Gives `cost` permits back to the time-based policies (`Store.refund`), with the take's
   * `receipts` (one per policy) when known. A key with no record is fresh: nothing to give.
   */
  refund(cost: number, receipts?: readonly (number | null | undefined)[]): void {
    for (const [i, entry] of this.#entries.entries()) {
      if (entry instanceof RateEntry && entry.known) {
        entry.limiter.refund(cost, receipts?.[i] ?? undefined)
      }
    }
  }

  /** Frees the slot of `lease` under the concurrency policy at `index` (`Store.release`). */
  release(index: number, lease: string): void {
    const entry = this.#entries[index]
    if (entry instanceof SlotsEntry) entry.leases = entry.leases.filter((held) => held.id !== lease)
  }

  /** Each policy's state, taking nothing (`Store.get`). */
  get(): StoredResult[] {
    return this.#entries.map((entry) => {
      const blocked = entry instanceof RateEntry ? entry.blockedFor(this.#now) : 0
      const available =
        entry instanceof RateEntry ? entry.limiter.availablePermits() : entry.available
      const allowed = blocked === 0 && available >= 1
      return result(entry, allowed, allowed, 1, blocked, undefined, undefined)
    })
  }

  /** The records that differ from those loaded: to write, or (undefined) to delete. */
  changes(): StoredChange[] {
    const changes: StoredChange[] = []
    for (const [index, entry] of this.#entries.entries()) {
      const freshInMs = entry.freshIn(this.#now)
      const record = entry instanceof RateEntry ? entry.record(this.#now) : entry.record()
      const changed =
        entry instanceof RateEntry
          ? entry.changed(record as RateRecord | undefined)
          : entry.changed()
      if (!changed) continue
      changes.push(freshInMs === undefined ? { index, record } : { index, record, freshInMs })
    }
    return changes
  }
}

/** One policy's result, computed as `memoryStore` computes it. */
function result(
  entry: Entry,
  admits: boolean,
  allowed: boolean,
  cost: number,
  blockedMs: number,
  lease: StoredLease | undefined,
  receipt: number | undefined,
): StoredResult {
  let available: number
  let resetMs = 0
  let retryAfterMs = 0
  if (entry instanceof RateEntry) {
    const { limiter } = entry
    available = Math.max(0, limiter.availablePermits())
    // Draft -10's reset: until one more permit is free; 0 when none can be (it is full).
    const more = limiter.retryAfterMs(available + 1)
    resetMs = Number.isFinite(more) ? more : 0
    if (!allowed) retryAfterMs = limiter.retryAfterMs(cost)
  } else {
    // A bulkhead has no time axis: its 0 means "unknown", as in RateLimitError.
    available = entry.available
  }
  return {
    allowed: admits,
    remaining: blockedMs > 0 ? 0 : available,
    resetMs: Math.max(blockedMs, resetMs),
    retryAfterMs: Math.max(blockedMs, retryAfterMs),
    ...(lease === undefined ? {} : { lease: { id: lease.id, permits: lease.permits } }),
    ...(receipt === undefined ? {} : { receipt }),
    ...(blockedMs > 0 ? { blocked: true as const } : {}),
  }
}
