import type { NormalizedRateSpec, NormalizedSpec } from '@sluice/core'
import { type Quota, type RateKernel, rateKernel } from '@sluice/core/internal'
import { costAt } from './call-checks'
import type { Cost, Penalty, Policy } from './store'
import { countStrike } from './strikes'

/**
 * What of a policy a store needs to decide on state kept as data: the fields that make
 * its state (`Policy` has them all). Without `fingerprint` (a caller of an earlier
 * version) a record is taken as written under the spec given, as before.
 */
export type StoredPolicy = Pick<Policy, 'id' | 'spec' | 'windowMs' | 'block'> &
  Partial<Pick<Policy, 'state' | 'fingerprint' | 'carry'>>

/** Where a store keeps a policy's records for a key: by name and algorithm when it can carry. */
export const recordPolicy = (policy: StoredPolicy): string => policy.state ?? policy.id

/** A time-based policy's state for one key: the limiter's and the penalty's. */
export interface RateRecord {
  /**
   * The key's row of the policy's kernel (`RateKernel.read`): may hold `-Infinity`, so
   * keep it as a structured clone.
   */
  readonly state: readonly number[]
  /** The layout `state` was written in; a record of another is read as fresh. */
  readonly v?: number
  /**
   * The fingerprint of the spec that wrote `state` (`Policy.fingerprint`), and that spec:
   * a policy of another fingerprint carries the state over to its own spec on load.
   */
  readonly f?: string
  readonly spec?: NormalizedRateSpec
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
  /**
   * The receipts of the take that took the slot, one per policy of that take (null where
   * none), when it took from time-based policies too: a retry of the take answers them.
   */
  readonly receipts?: readonly (number | null)[]
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

const sameStrikes = (a: Strikes | undefined, b: Strikes | undefined) =>
  a === b || (a?.count === b?.count && a?.since === b?.since && a?.until === b?.until)

/**
 * The layout of `RateRecord.state`: the kernels' rows. Records of an earlier layout (before
 * the kernels counted in whole microseconds) are read as fresh, once.
 */
const RECORD_VERSION = 3

/** A time-based policy's state for one key during an operation: its kernel's one row. */
class RateEntry {
  readonly kernel: RateKernel
  strikes: Strikes | undefined
  readonly #policy: StoredPolicy
  readonly #loaded: RateRecord | undefined

  constructor(policy: StoredPolicy, now: number, loaded: RateRecord | undefined) {
    this.#policy = policy
    const kernel = rateKernel(policy.spec as NormalizedRateSpec)
    kernel.resize(1)
    const record = loaded?.v === RECORD_VERSION ? loaded : undefined
    if (record === undefined) kernel.clear(0, now)
    else if (
      record.f !== undefined &&
      record.spec?.algorithm === policy.spec.algorithm &&
      policy.fingerprint !== undefined &&
      record.f !== policy.fingerprint
    ) {
      // Written under another spec of this name: carried over once, in this operation; the
      // record written back names the new spec, so the next load converts nothing.
      const from = rateKernel(record.spec)
      from.resize(1)
      from.write(0, record.state)
      kernel.carry(0, now, from, 0, policy.carry ?? 'proportional')
    } else kernel.write(0, record.state)
    this.kernel = kernel
    this.strikes = loaded?.strikes
    this.#loaded = loaded
  }

  get known(): boolean {
    return this.#loaded !== undefined
  }

  /** Milliseconds the key stays blocked by the penalty at `now` (0: not blocked). */
  blockedFor(now: number): number {
    return Math.max((this.strikes?.until ?? 0) - now, 0)
  }

  /**
   * Blocks the key for `ms` from `now` (0: lifts a block). Strikes count afresh once it
   * ends: its window is taken to have started one window before the block's end.
   */
  block(now: number, ms: number): void {
    const until = now + ms
    this.strikes = ms === 0 ? undefined : { count: 0, since: until - this.#policy.windowMs, until }
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

  #state(): number[] {
    const state = new Array<number>(this.kernel.width)
    this.kernel.read(0, state)
    return state
  }

  /** Milliseconds until the record is worth nothing; undefined for warm-up (never). */
  freshIn(now: number): number | undefined {
    if (this.kernel.ageless) return undefined
    const strikes = this.strikes
    const penalty =
      strikes === undefined
        ? 0
        : Math.max(strikes.until, strikes.since + this.#policy.windowMs) - now
    return Math.max(this.kernel.untilFresh(0, now), penalty, 0)
  }

  /** What to keep: undefined once nothing is worth keeping (the key is fresh). */
  record(now: number): RateRecord | undefined {
    const strikes =
      this.strikes !== undefined &&
      Math.max(this.strikes.until, this.strikes.since + this.#policy.windowMs) > now
        ? this.strikes
        : undefined
    // A warm-up kernel's state is its age: forgetting it would start the key cold again.
    const fresh = !this.kernel.ageless && this.kernel.isFresh(0, now)
    if (fresh && strikes === undefined) return undefined
    const state = this.#state()
    const { fingerprint } = this.#policy
    const written =
      fingerprint === undefined
        ? { v: RECORD_VERSION, state }
        : { v: RECORD_VERSION, state, f: fingerprint, spec: this.kernel.spec }
    return strikes === undefined ? written : { ...written, strikes }
  }

  /** Whether `record` differs from what was loaded. */
  changed(record: RateRecord | undefined): boolean {
    const loaded = this.#loaded
    if (record === undefined || loaded === undefined) return record !== loaded
    const { state } = record
    return (
      loaded.v !== record.v ||
      loaded.f !== record.f ||
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
    this.#policies = policies
    this.#now = now
    this.#entries = policies.map((policy, i) =>
      policy.spec.algorithm === 'concurrency'
        ? new SlotsEntry(policy.spec, records[i] as SlotsRecord | undefined, now)
        : new RateEntry(policy, now, records[i] as RateRecord | undefined),
    )
  }

  /**
   * Takes `cost` permits from every policy, or from none (`Store.take`). A concurrency
   * policy's slot is a lease held until released, or for `leaseTtlMs` at most.
   *
   * `leaseId` names the take's leases (one id for all of its concurrency policies; random
   * when absent). A take whose id already holds a slot here is the retry of one that was
   * admitted (its answer was lost on the way back): it is admitted again and takes
   * nothing, so a retried take is counted once and holds one slot.
   */
  take(
    cost: Cost,
    leaseTtlMs: number,
    leaseId?: string,
  ): { allowed: boolean; results: StoredResult[] } {
    if (leaseId !== undefined) {
      const retried = this.#retried(cost, leaseId)
      if (retried !== undefined) return retried
    }
    const entries = this.#entries
    const now = this.#now
    const blocked = entries.map((entry) => (entry instanceof RateEntry ? entry.blockedFor(now) : 0))
    // Exact kernels: what fits is what takes, so every policy is checked, then each takes.
    const admits = entries.map(
      (entry, i) =>
        blocked[i] === 0 &&
        (entry instanceof RateEntry
          ? entry.kernel.fits(0, now, costAt(cost, i))
          : entry.available >= costAt(cost, i)),
    )
    const allowed = admits.every(Boolean)
    const leases: (StoredLease | undefined)[] = entries.map(() => undefined)
    const receipts: (number | undefined)[] = entries.map(() => undefined)
    if (allowed) {
      let id = leaseId
      for (const [i, entry] of entries.entries()) {
        const charge = costAt(cost, i)
        if (charge !== 0 && entry instanceof RateEntry) {
          entry.kernel.take(0, now, charge)
          receipts[i] = entry.kernel.receipt(0)
        }
      }
      const taken = receipts.some((receipt) => receipt !== undefined)
        ? { receipts: receipts.map((receipt) => receipt ?? null) }
        : {}
      for (const [i, entry] of entries.entries()) {
        const charge = costAt(cost, i)
        if (charge !== 0 && entry instanceof SlotsEntry) {
          // Random when the caller names none: ids must stay unique across every holder
          // and restart of the store.
          id ??= crypto.randomUUID()
          const lease = { id, permits: charge, expiresAt: now + leaseTtlMs, ...taken }
          entry.leases.push(lease)
          leases[i] = lease
        }
      }
    } else {
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
        result(
          entry,
          now,
          admits[i]!,
          allowed,
          costAt(cost, i),
          blocked[i]!,
          leases[i],
          receipts[i],
        ),
      ),
    }
  }

  /**
   * The answer to a retry of an admitted take, found by its lease id: admitted, with the
   * slots it holds and the receipts it was given; undefined when `leaseId` holds no slot.
   */
  #retried(cost: Cost, leaseId: string): { allowed: boolean; results: StoredResult[] } | undefined {
    const entries = this.#entries
    const held = entries.map((entry) =>
      entry instanceof SlotsEntry ? entry.leases.find((lease) => lease.id === leaseId) : undefined,
    )
    const first = held.find((lease) => lease !== undefined)
    if (first === undefined) return undefined
    const now = this.#now
    return {
      allowed: true,
      results: entries.map((entry, i) => {
        const blocked = entry instanceof RateEntry ? entry.blockedFor(now) : 0
        const receipt = entry instanceof RateEntry ? (first.receipts?.[i] ?? undefined) : undefined
        return result(entry, now, true, true, costAt(cost, i), blocked, held[i], receipt)
      }),
    }
  }

  /**
   * Gives `cost` permits back to the time-based policies (`Store.refund`), with the take's
   * `receipts` (one per policy) when known. A key with no record is fresh: nothing to give.
   */
  refund(cost: Cost, receipts?: readonly (number | null | undefined)[]): void {
    for (const [i, entry] of this.#entries.entries()) {
      const charge = costAt(cost, i)
      if (entry instanceof RateEntry && entry.known && charge > 0) {
        entry.kernel.refund(0, this.#now, charge, receipts?.[i] ?? undefined)
      }
    }
  }

  /** Takes `cost` from the time-based policies whether it fits or not (`Store.force`). */
  force(cost: Cost): StoredResult[] {
    for (const [i, entry] of this.#entries.entries()) {
      const charge = costAt(cost, i)
      if (entry instanceof RateEntry && charge > 0) entry.kernel.force(0, this.#now, charge)
    }
    return this.get()
  }

  /** Blocks the key under the time-based policies for `ms` (`Store.block`; 0 lifts it). */
  block(ms: number): void {
    for (const entry of this.#entries) {
      if (entry instanceof RateEntry) entry.block(this.#now, ms)
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
        entry instanceof RateEntry ? entry.kernel.available(0, this.#now) : entry.available
      const allowed = blocked === 0 && available >= 1
      return result(entry, this.#now, allowed, allowed, 1, blocked, undefined, undefined)
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

/** What a kernel reports into for `result`: one per process, read before the next call. */
const QUOTA: Quota = { available: 0, resetMs: 0, retryAfterMs: 0, receipt: 0 }

/** One policy's result, computed as `memoryStore` computes it. */
function result(
  entry: Entry,
  now: number,
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
    entry.kernel.quota(0, now, cost, allowed, QUOTA)
    available = QUOTA.available
    // A blocked key's next quota is the first permit it may take once the block is over.
    resetMs = blockedMs > 0 ? entry.kernel.wait(0, now, 1) : QUOTA.resetMs
    retryAfterMs = QUOTA.retryAfterMs
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
