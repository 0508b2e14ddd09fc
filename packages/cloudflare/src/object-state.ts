import {
  type Clock,
  createLimiter,
  isPortable,
  type NormalizedSpec,
  type PortableRateLimiter,
} from '@sluice/core'
import type { Penalty } from '@sluice/http'
import type { Operation, WirePolicy, WireResult, WireTake } from './protocol'

/**
 * The part of a Durable Object's storage the object uses (the key-value API, on the
 * SQLite and the older key-value backends alike). Values are structured clones, so the
 * limiters' `-Infinity` survives.
 */
export interface ObjectStorage {
  get<T = unknown>(keys: string[]): Promise<Map<string, T>>
  put(entries: Record<string, unknown>): Promise<void>
  delete(keys: string[]): Promise<number>
  list<T = unknown>(options: { prefix: string }): Promise<Map<string, T>>
  deleteAll(): Promise<void>
}

/** A time-based policy's record for one key: the limiter's state and the penalty's strikes. */
interface RateRecord {
  /** `exportState()` of the key's limiter. */
  readonly state: number[]
  /** Refusals counted since `since`, blocked until `until` (penalty only). */
  readonly strikes?: Strikes
}

interface Strikes {
  readonly count: number
  readonly since: number
  readonly until: number
}

/** A concurrency policy's record for one key: the slots held, each until it expires. */
interface SlotsRecord {
  readonly leases: readonly Lease[]
}

interface Lease {
  readonly id: string
  readonly permits: number
  readonly expiresAt: number
}

type StoredRecord = RateRecord | SlotsRecord

const sameStrikes = (a: Strikes | undefined, b: Strikes | undefined) =>
  a === b || (a?.count === b?.count && a?.since === b?.since && a?.until === b?.until)

/** Most records the object keeps in memory; the rest are read from storage when needed. */
const CACHED_RECORDS = 10_000

/** Separates the client key from the policy id in a record's name; keys never hold NUL. */
const SEPARATOR = '\u0000'

const recordName = (key: string, policy: string) => `${key}${SEPARATOR}${policy}`

/** The time of one operation: every limiter and expiry in it reads the same instant. */
class OperationClock implements Clock {
  time = 0

  now(): number {
    return this.time
  }

  sleep(): Promise<void> {
    return Promise.reject(new Error('sluice: a limiter in a Durable Object never waits'))
  }
}

/** A time-based policy's view of one key during an operation. */
class RateEntry {
  readonly limiter: PortableRateLimiter
  strikes: Strikes | undefined
  readonly #policy: WirePolicy
  readonly #saved: readonly number[] | undefined
  readonly #savedStrikes: Strikes | undefined

  constructor(policy: WirePolicy, clock: OperationClock, record: RateRecord | undefined) {
    this.#policy = policy
    const limiter = createLimiter(policy.spec, clock)
    if (!isPortable(limiter)) throw new TypeError(`not a rate algorithm: ${policy.spec.algorithm}`)
    if (record !== undefined) limiter.importState(record.state)
    this.limiter = limiter
    this.strikes = record?.strikes
    this.#saved = record?.state
    this.#savedStrikes = record?.strikes
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
    let { count, since, until } = this.strikes ?? { count: 0, since: now, until: 0 }
    if (now - since >= this.#policy.windowMs) {
      count = 0
      since = now
      until = 0
    }
    count++
    if (count >= block.after) {
      count = 0
      since = now
      until = now + block.forMs
    }
    this.strikes = { count, since, until }
    return until > now ? block.forMs : 0
  }

  /** What to store: undefined once there is nothing worth keeping (the key is fresh). */
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

  /** Whether `record` differs from what was loaded (so storage needs a write). */
  changed(record: RateRecord | undefined): boolean {
    const saved = this.#saved
    if (record === undefined || saved === undefined) return record?.state !== saved
    const { state } = record
    return (
      state.length !== saved.length ||
      state.some((value, i) => !Object.is(value, saved[i])) ||
      !sameStrikes(record.strikes, this.#savedStrikes)
    )
  }
}

/** A concurrency policy's view of one key during an operation: the leases still alive. */
class SlotsEntry {
  leases: Lease[]
  readonly max: number

  constructor(spec: NormalizedSpec, record: SlotsRecord | undefined, now: number) {
    this.max = spec.algorithm === 'concurrency' ? spec.max : 0
    this.leases = (record?.leases ?? []).filter((lease) => lease.expiresAt > now)
  }

  get available(): number {
    let held = 0
    for (const lease of this.leases) held += lease.permits
    return Math.max(this.max - held, 0)
  }

  record(): SlotsRecord | undefined {
    return this.leases.length === 0 ? undefined : { leases: this.leases }
  }
}

type Entry = RateEntry | SlotsEntry

/**
 * The state and decisions of one Durable Object of `durableObjectStore`: every client key
 * that hashes to it, under every policy. It decides exactly as `memoryStore` does (the
 * same `@sluice/core` limiters, penalties and lease rules), on its own clock, and keeps
 * every change in the object's storage, so a budget outlives the object's eviction from
 * memory. Operations run one at a time.
 */
export class ObjectState {
  readonly #storage: ObjectStorage
  readonly #source: Clock
  readonly #clock = new OperationClock()
  /** Records by name, most recently used last; null: known to be absent from storage. */
  readonly #cache = new Map<string, StoredRecord | null>()
  #queue: Promise<unknown> = Promise.resolve()

  constructor(storage: ObjectStorage, clock: Clock) {
    this.#storage = storage
    this.#source = clock
  }

  /** Runs one operation after the ones before it. */
  run(operation: Operation): Promise<unknown> {
    const next = this.#queue.then(() => this.#execute(operation))
    this.#queue = next.catch(() => {})
    return next
  }

  async #execute(operation: Operation): Promise<unknown> {
    switch (operation.op) {
      case 'take':
        return this.#take(operation.key, operation.policies, operation.cost, operation.leaseTtlMs)
      case 'refund':
        return this.#refund(operation.key, operation.policies, operation.cost, operation.receipts)
      case 'release':
        return this.#release(operation.key, operation.policy, operation.lease)
      case 'get':
        return this.#get(operation.key, operation.policies)
      case 'reset':
        return this.#reset(operation.key, operation.policies)
      case 'resetAll':
        this.#cache.clear()
        await this.#storage.deleteAll()
        return null
    }
  }

  async #entries(key: string, policies: readonly WirePolicy[]): Promise<Entry[]> {
    const names = policies.map((policy) => recordName(key, policy.id))
    const records = await this.#load(names)
    const now = this.#source.now()
    this.#clock.time = now
    return policies.map((policy, i) =>
      policy.spec.algorithm === 'concurrency'
        ? new SlotsEntry(policy.spec, records[i] as SlotsRecord | undefined, now)
        : new RateEntry(policy, this.#clock, records[i] as RateRecord | undefined),
    )
  }

  async #take(
    key: string,
    policies: readonly WirePolicy[],
    cost: number,
    leaseTtlMs: number,
  ): Promise<WireTake> {
    const entries = await this.#entries(key, policies)
    const now = this.#clock.time
    const blocked = entries.map((entry) => (entry instanceof RateEntry ? entry.blockedFor(now) : 0))
    const admits = entries.map(
      (entry, i) =>
        blocked[i] === 0 &&
        (entry instanceof RateEntry ? entry.limiter.availablePermits() : entry.available) >= cost,
    )
    let allowed = admits.every(Boolean)
    const leases: (Lease | undefined)[] = []
    const receipts: (number | undefined)[] = []
    if (allowed) {
      const before = entries.map((entry) =>
        entry instanceof RateEntry ? entry.limiter.exportState() : undefined,
      )
      for (const [i, entry] of entries.entries()) {
        if (entry instanceof SlotsEntry) {
          // Random: ids must stay unique across restarts of the object, whose leases persist.
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
        const block = policies[i]!.block
        if (!admits[i] && block !== undefined && blocked[i] === 0 && entry instanceof RateEntry) {
          blocked[i] = entry.strike(now, block)
        }
      }
    }
    this.#save(key, policies, entries)
    return {
      allowed,
      results: entries.map((entry, i) =>
        result(entry, admits[i]!, allowed, cost, blocked[i]!, leases[i], receipts[i]),
      ),
    }
  }

  async #refund(
    key: string,
    policies: readonly WirePolicy[],
    cost: number,
    receipts: readonly (number | null)[] | undefined,
  ): Promise<null> {
    const timed = policies.filter((policy) => policy.spec.algorithm !== 'concurrency')
    const known = await this.#load(timed.map((policy) => recordName(key, policy.id)))
    const entries = await this.#entries(key, timed)
    for (const [i, entry] of entries.entries()) {
      // No record: the key is fresh (or was reset), so there is nothing to give back.
      if (known[i] === undefined || !(entry instanceof RateEntry)) continue
      const receipt = receipts?.[policies.indexOf(timed[i]!)]
      entry.limiter.refund(cost, receipt ?? undefined)
    }
    this.#save(key, timed, entries)
    return null
  }

  async #release(key: string, policy: string, lease: string): Promise<null> {
    const name = recordName(key, policy)
    const [record] = (await this.#load([name])) as [SlotsRecord | undefined]
    if (record === undefined || !record.leases.some((held) => held.id === lease)) return null
    const leases = record.leases.filter((held) => held.id !== lease)
    this.#write(name, leases.length === 0 ? undefined : { leases })
    return null
  }

  async #get(key: string, policies: readonly WirePolicy[]): Promise<WireTake> {
    const entries = await this.#entries(key, policies)
    const now = this.#clock.time
    const results = entries.map((entry) => {
      const blocked = entry instanceof RateEntry ? entry.blockedFor(now) : 0
      const available =
        entry instanceof RateEntry ? entry.limiter.availablePermits() : entry.available
      const allowed = blocked === 0 && available >= 1
      return result(entry, allowed, allowed, 1, blocked, undefined, undefined)
    })
    return { allowed: results.every((r) => r.allowed), results }
  }

  async #reset(key: string, policies: readonly string[] | undefined): Promise<null> {
    let names: string[]
    if (policies === undefined) {
      const prefix = `${key}${SEPARATOR}`
      const stored = await this.#storage.list({ prefix })
      names = [...stored.keys()]
      for (const name of this.#cache.keys()) if (name.startsWith(prefix)) names.push(name)
    } else {
      names = policies.map((policy) => recordName(key, policy))
    }
    for (const name of names) this.#cache.set(name, null)
    this.#trim()
    if (names.length > 0) await this.#storage.delete([...new Set(names)])
    return null
  }

  /** The records of `names`, in order (undefined where there is none). */
  async #load(names: readonly string[]): Promise<(StoredRecord | undefined)[]> {
    const missing = names.filter((name) => !this.#cache.has(name))
    if (missing.length > 0) {
      const stored = await this.#storage.get<StoredRecord>(missing)
      for (const name of missing) this.#cache.set(name, stored.get(name) ?? null)
    }
    return names.map((name) => {
      const record = this.#cache.get(name)
      // Touched: the most recently used records stay in memory.
      this.#cache.delete(name)
      this.#cache.set(name, record ?? null)
      return record ?? undefined
    })
  }

  #save(key: string, policies: readonly WirePolicy[], entries: readonly Entry[]): void {
    const now = this.#clock.time
    for (const [i, entry] of entries.entries()) {
      const record = entry instanceof RateEntry ? entry.record(now) : entry.record()
      if (entry instanceof RateEntry && !entry.changed(record as RateRecord | undefined)) continue
      this.#write(recordName(key, policies[i]!.id), record)
    }
    this.#trim()
  }

  /**
   * Writes a record (or deletes it) in memory and in storage. Not awaited: a Durable
   * Object's output gate holds the answer until storage has confirmed the write, and the
   * next operation reads the cache.
   */
  #write(name: string, record: StoredRecord | undefined): void {
    this.#cache.delete(name)
    this.#cache.set(name, record ?? null)
    void (record === undefined
      ? this.#storage.delete([name])
      : this.#storage.put({ [name]: record }))
  }

  #trim(): void {
    for (const name of this.#cache.keys()) {
      if (this.#cache.size <= CACHED_RECORDS) return
      this.#cache.delete(name)
    }
  }
}

/** One policy's result, computed as `memoryStore` computes it. */
function result(
  entry: Entry,
  admits: boolean,
  allowed: boolean,
  cost: number,
  blockedMs: number,
  lease: Lease | undefined,
  receipt: number | undefined,
): WireResult {
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
  const wait = Math.max(blockedMs, retryAfterMs)
  return {
    allowed: admits,
    remaining: blockedMs > 0 ? 0 : available,
    resetMs: Math.max(blockedMs, resetMs),
    retryAfterMs: Number.isFinite(wait) ? wait : null,
    ...(lease === undefined ? {} : { lease: { id: lease.id, permits: lease.permits } }),
    ...(receipt === undefined ? {} : { receipt }),
    ...(blockedMs > 0 ? { blocked: true as const } : {}),
  }
}
