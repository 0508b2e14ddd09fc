import type { Carry, Clock, NormalizedRateSpec } from '@sluice/core'
import { type Quota, type RateKernel, rateKernel } from '@sluice/core/internal'
import { readClock, readOptions, readPositiveInteger } from '@sluice/core/validation'
import { checkBlock, checkCost, costAt } from './call-checks'
import { boundedKey, MAX_KEY_LENGTH } from './key'
import { KeyIndex } from './key-index'
import type {
  Cost,
  Lease,
  Penalty,
  Policy,
  PolicyResult,
  Store,
  TakeBuffer,
  TakeResult,
} from './store'
import { countStrike, type StrikeCount } from './strikes'

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Most client keys each policy keeps state for (an LRU per time-based policy; idle
   * bulkhead slots kept for reuse). Default 100,000, at most 10,000,000. Memory grows with
   * the keys actually seen, up to this bound.
   */
  maxKeys?: number
  /**
   * Most states (one per client key and time-based policy) kept over all policies
   * together: what bounds memory when policies are made per request (a limit per plan or
   * tenant, which a client may influence). Beyond it, the least recently used policy's
   * least recently used key goes first (it starts over with a fresh budget). Default
   * 8 × `maxKeys`.
   */
  maxStates?: number
  /** Time source for the limiters (pass a `ManualClock` in tests). Default `systemClock`. */
  clock?: Clock
}

/** The in-process store: every method answers synchronously. */
export interface MemoryStore extends Store {
  take(key: string, policies: readonly Policy[], cost: Cost, into?: TakeBuffer): TakeResult
  refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts?: readonly (number | undefined)[],
  ): void
  force(key: string, policies: readonly Policy[], cost: Cost): readonly PolicyResult[]
  block(key: string, policies: readonly Policy[], ms: number): void
  release(key: string, policy: Policy, lease: Lease): void
  get(key: string, policies: readonly Policy[]): readonly PolicyResult[]
  reset(key: string, policies?: readonly Policy[]): void
  resetAll(): void
  /**
   * Keys holding time-based state, summed over policies (each keeps at most `maxKeys`, all
   * together at most `maxStates`).
   */
  readonly size: number
  /** Concurrency permits currently held, over all keys. */
  readonly inFlight: number
}

/**
 * Keys are bounded at the store, whoever calls it: a 16 KB key is kept as its digest, so
 * `maxKeys` bounds memory in bytes too.
 */
const bound = (key: string) => (key.length > MAX_KEY_LENGTH ? boundedKey(key) : key)

/** A sanity bound: state for more keys than this in one process is a misconfiguration. */
const MAX_KEYS = 10_000_000

const isConcurrency = (policy: Policy) => policy.spec.algorithm === 'concurrency'

/**
 * Most specs one policy name keeps a kernel for at once: a rolling deploy needs two, a
 * `limit` function one per plan. A further spec takes over the least recently used one's
 * kernel, carrying that spec's keys over first.
 */
const MAX_SPECS = 16

/**
 * One time-based policy name's keys: an LRU index of keys to rows, a keyed kernel per spec
 * the name was used with (the rows of all of them line up with the index), which kernel
 * holds each key's state, and, for a policy with a penalty, each refused key's strikes.
 * A key touched under another spec than the one its state was written under is carried
 * over into that spec's kernel first (once: its row then belongs to the new kernel).
 */
class RateTable {
  /** The kernel of the spec in use (see {@link use}). */
  kernel: RateKernel
  readonly index: KeyIndex
  /** Blocks and a penalty's strikes: made with the table for a policy with a penalty, else by `block`. */
  strikes: StrikeTable | undefined
  readonly #maxKeys: number
  readonly #budget: Budget
  readonly #kernels: RateKernel[] = []
  readonly #fingerprints: string[] = []
  /** When each kernel was last put in use, for choosing which one a new spec takes over. */
  readonly #usedAt: number[] = []
  #uses = 0
  /** Per row: the index in `#kernels` of the kernel holding the key's state. */
  #owners = new Uint8Array(0)
  /** The kernel in use, as an index in `#kernels`, and how state carries into it. */
  #current = 0
  #carry: Carry = 'proportional'

  constructor(policy: Policy, maxKeys: number, budget: Budget, now: number) {
    this.index = new KeyIndex(maxKeys, (rows) => this.#grow(rows))
    this.strikes = policy.block === undefined ? undefined : new StrikeTable(maxKeys)
    this.#maxKeys = maxKeys
    this.#budget = budget
    this.kernel = this.#add(policy, now)
    this.#carry = policy.carry ?? 'proportional'
  }

  /**
   * Puts `policy`'s spec in use: its kernel (made when the spec is new to this name)
   * decides the calls that follow, and keys written under another spec carry over into it
   * as `policy.carry` says when they are touched. Nothing is converted here but, when this
   * name already keeps a kernel for {@link MAX_SPECS} specs, the keys of the one taken over.
   */
  use(policy: Policy, now: number): void {
    this.#carry = policy.carry ?? 'proportional'
    if (this.#fingerprints[this.#current] === policy.fingerprint) {
      this.#usedAt[this.#current] = ++this.#uses
      return
    }
    const found = this.#fingerprints.indexOf(policy.fingerprint)
    if (found !== -1) {
      this.#current = found
      this.kernel = this.#kernels[found]!
      this.#usedAt[found] = this.#uses
      return
    }
    this.kernel = this.#add(policy, now)
  }

  /** A kernel for a spec new to this name, in a slot of its own or the least recently used one's. */
  #add(policy: Policy, now: number): RateKernel {
    const kernel = rateKernel(policy.spec as NormalizedRateSpec)
    kernel.resize(this.#owners.length)
    let slot = this.#kernels.length
    if (slot === MAX_SPECS) {
      slot = this.#usedAt.indexOf(Math.min(...this.#usedAt))
      const from = this.#kernels[slot]!
      for (let row = 0; row < this.#owners.length; row++) {
        if (this.#owners[row] === slot && this.index.keyAt(row) !== undefined) {
          kernel.carry(row, now, from, row, policy.carry ?? 'proportional')
        }
      }
    }
    this.#kernels[slot] = kernel
    this.#fingerprints[slot] = policy.fingerprint
    this.#usedAt[slot] = ++this.#uses
    this.#current = slot
    return kernel
  }

  #grow(rows: number): void {
    for (const kernel of this.#kernels) kernel.resize(rows)
    const owners = new Uint8Array(rows)
    owners.set(this.#owners)
    this.#owners = owners
  }

  /** Carries the row's state into the kernel in use, unless it is there already. */
  #own(row: number, now: number): void {
    const owner = this.#owners[row]!
    if (owner === this.#current) return
    this.kernel.carry(row, now, this.#kernels[owner]!, row, this.#carry)
    this.#owners[row] = this.#current
  }

  /** The table's strikes, made on first use. */
  strikeTable(): StrikeTable {
    this.strikes ??= new StrikeTable(this.#maxKeys)
    return this.strikes
  }

  /** Milliseconds the key stays blocked (0: not blocked). */
  blockedFor(key: string, now: number): number {
    return this.strikes === undefined ? 0 : this.strikes.blockedFor(key, now)
  }

  /**
   * The key's row, now the most recently used, or -1 when it has none. A warm-up key gets
   * one at first sight: its age counts from then.
   */
  rowOf(key: string, now: number): number {
    const row = this.index.find(key)
    if (row !== -1) {
      this.index.touch(row)
      this.#own(row, now)
    } else if (this.kernel.ageless) return this.insert(key, now)
    return row
  }

  /**
   * The key's row if it holds anything a fresh limiter would not (now the most recently
   * used), or -1; a row gone back to fresh is dropped on the way, so `size` counts live keys.
   */
  liveRowOf(key: string, now: number): number {
    const row = this.rowOf(key, now)
    if (row === -1 || !this.dropIfFresh(row, now)) return row
    return -1
  }

  /** Drops `row` when it is back to fresh (an expiry that loses nothing); says whether it did. */
  dropIfFresh(row: number, now: number): boolean {
    if (this.kernel.ageless || !this.kernel.isFresh(row, now)) return false
    this.index.remove(row)
    this.#budget.used--
    return true
  }

  /**
   * A fresh row for a key that has none (evicting this table's least recently used key
   * when it is full, or making room in the store's budget of states).
   */
  insert(key: string, now: number): number {
    if (this.index.size < this.#maxKeys) this.#budget.makeRoom(this)
    const before = this.index.size
    const row = this.index.insert(key)
    this.#budget.used += this.index.size - before
    this.kernel.clear(row, now)
    this.#owners[row] = this.#current
    return row
  }

  /** Nothing kept: no state, no strikes (a block outlives its key's state). */
  get empty(): boolean {
    return this.index.size === 0 && (this.strikes === undefined || this.strikes.index.size === 0)
  }

  /** Forgets this table's least recently used key, for the store's budget; false when empty. */
  evictOldest(): boolean {
    if (!this.index.evictOldest()) return false
    this.#budget.used--
    return true
  }

  delete(key: string): void {
    const before = this.index.size
    this.index.delete(key)
    this.#budget.used -= before - this.index.size
    this.strikes?.delete(key)
  }
}

/**
 * The states all time-based policies of a store keep together, and how to make room for
 * one more: the store's least recently used table gives up its least recently used key.
 */
interface Budget {
  used: number
  makeRoom(inserting: RateTable): void
}

/** Numbers per key in a {@link StrikeTable}: count, since, until, kept until. */
const STRIKE_WIDTH = 4

/**
 * A penalty's strikes per key: refusals counted since `since`, blocked until `until`, kept
 * until the block ends or the strikes' window closes, whichever is later.
 */
class StrikeTable {
  readonly index: KeyIndex
  #state = new Float64Array(0)
  /** One key's strikes while they are counted, so a refusal allocates nothing. */
  readonly #scratch: StrikeCount = { count: 0, since: 0, until: 0 }

  constructor(maxKeys: number) {
    this.index = new KeyIndex(maxKeys, (rows) => {
      const state = new Float64Array(rows * STRIKE_WIDTH)
      state.set(this.#state)
      this.#state = state
    })
  }

  /** The key's row (now the most recently used), or -1; strikes kept past their time are dropped. */
  #rowOf(key: string, now: number): number {
    const row = this.index.find(key)
    if (row === -1) return -1
    if (now > (this.#state[STRIKE_WIDTH * row + 3] as number)) {
      this.index.remove(row)
      return -1
    }
    this.index.touch(row)
    return row
  }

  /** Milliseconds the key stays blocked (0: not blocked). */
  blockedFor(key: string, now: number): number {
    const row = this.#rowOf(key, now)
    if (row === -1) return 0
    const left = (this.#state[STRIKE_WIDTH * row + 2] as number) - now
    return Math.max(left, 0)
  }

  /**
   * Counts a refusal against the key's penalty: the `after`th refusal within one window
   * of the first starts a block. Returns the block's length, or 0.
   */
  strike(key: string, block: Penalty, windowMs: number, now: number): number {
    let row = this.#rowOf(key, now)
    const at = STRIKE_WIDTH * row
    const strikes = this.#scratch
    strikes.count = row === -1 ? 0 : (this.#state[at] as number)
    strikes.since = row === -1 ? now : (this.#state[at + 1] as number)
    strikes.until = row === -1 ? 0 : (this.#state[at + 2] as number)
    countStrike(strikes, block, windowMs, now)
    const { count, since, until } = strikes
    if (row === -1) row = this.index.insert(key)
    // Kept while it can still matter: until the block ends or the strikes' window closes.
    const keepFor = Math.max(1, Math.ceil(Math.max(until, since + windowMs) - now))
    const state = this.#state
    const to = STRIKE_WIDTH * row
    state[to] = count
    state[to + 1] = since
    state[to + 2] = until
    state[to + 3] = now + keepFor
    return until > now ? block.forMs : 0
  }

  /**
   * Blocks the key for `ms` from `now` (0: lifts a block). Strikes count afresh once it
   * ends: its window is taken to have started `windowMs` before the block's end.
   */
  block(key: string, ms: number, windowMs: number, now: number): void {
    let row = this.#rowOf(key, now)
    if (ms === 0) {
      if (row !== -1) this.index.remove(row)
      return
    }
    if (row === -1) row = this.index.insert(key)
    const state = this.#state
    const at = STRIKE_WIDTH * row
    state[at] = 0
    state[at + 1] = now + ms - windowMs
    state[at + 2] = now + ms
    state[at + 3] = now + ms
  }

  delete(key: string): void {
    this.index.delete(key)
  }
}

/**
 * One concurrency policy's slots under one key. Kept while idle, so a bulkhead whose
 * requests come one at a time reuses it instead of building it anew for every request.
 */
class Slots {
  held = 0
  /** False once `reset` forgot it: leases taken from it release nothing. */
  live = true
}

/**
 * A concurrency slot held in the memory store. The lease itself is what `release` checks,
 * so releasing it twice, or after a reset, is a no-op.
 */
class MemoryLease implements Lease {
  readonly permits: number
  readonly slots: Slots
  readonly #seq: number
  open = true

  constructor(slots: Slots, permits: number, seq: number) {
    this.slots = slots
    this.permits = permits
    this.#seq = seq
  }

  /** Made when read: nothing on the request path needs it as text. */
  get id(): string {
    return String(this.#seq)
  }
}

/**
 * One concurrency policy name's keys: their slots, idle ones included up to `maxKeys` keys.
 * The `max` a take is checked against is its policy's, so a bulkhead reconfigured below
 * what is held refuses newcomers until enough slots are released, and never revokes one.
 */
class SlotTable {
  readonly #byKey = new Map<string, Slots>()
  readonly #keepIdle: number

  constructor(maxKeys: number) {
    this.#keepIdle = maxKeys
  }

  find(key: string): Slots | undefined {
    return this.#byKey.get(key)
  }

  slotsOf(key: string): Slots {
    let slots = this.#byKey.get(key)
    if (slots === undefined) {
      slots = new Slots()
      this.#byKey.set(key, slots)
    }
    return slots
  }

  /** Lets an idle key's slots go once more than `maxKeys` keys are kept. */
  settle(key: string, slots: Slots): void {
    if (slots.held === 0 && this.#byKey.size > this.#keepIdle) this.#byKey.delete(key)
  }

  /** Forgets the key; returns the permits it held. */
  delete(key: string): number {
    const slots = this.#byKey.get(key)
    if (slots === undefined) return 0
    slots.live = false
    this.#byKey.delete(key)
    return slots.held
  }

  /** Forgets every key. */
  clear(): void {
    for (const slots of this.#byKey.values()) slots.live = false
    this.#byKey.clear()
  }
}

type Table = RateTable | SlotTable

/**
 * Keeps per-key limiter state in this process: per policy, an LRU bounded by `maxKeys`,
 * with no timers.
 *
 * - A key's state is a row in typed arrays: one number for a token or leaky bucket, two
 *   for a fixed window or a warm-up bucket, a sliding window's `slots + 2` small counts and
 *   one number (a few dozen bytes a key, with the index); memory grows with the keys seen.
 * - A key's state is dropped only once it is back to fresh (checked on access), so expiry
 *   never hands out extra permits. Warm-up state never expires: it is the key's age.
 * - Concurrency slots live outside the LRU, so a key with requests in flight is never
 *   dropped; an idle key's (empty) slots are kept for reuse, up to `maxKeys` keys.
 * - When a policy's LRU is full, a new key evicts the least recently used one and that key
 *   starts over with a fresh budget. A hot key is used constantly, so it stays at the
 *   recent end and is only evicted if more than `maxKeys` other keys arrive between two of
 *   its requests. Size `maxKeys` above the distinct clients you expect within one window.
 * - A policy's state belongs to its name (and algorithm): a policy of the same name with
 *   another spec (a reconfigured limiter, a second middleware during a rolling change, a
 *   `limit` function's other plan) carries each key's state over to its spec when it
 *   touches the key, once, as its `carry` says; the last spec a key was touched under wins.
 *   When nothing changed this costs nothing per decision.
 *
 * @example
 * ```ts
 * const store = memoryStore({ maxKeys: 50_000 })
 * app.use(rateLimit({ limit: 100, window: '1m', store }))
 * ```
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const factory = 'memoryStore'
  // Own properties only: a polluted Object.prototype must not configure a store.
  const given = readOptions(factory, options, ['maxKeys', 'maxStates', 'clock'])
  const maxKeys =
    given.maxKeys === undefined ? 100_000 : readPositiveInteger(factory, 'maxKeys', given.maxKeys)
  if (maxKeys > MAX_KEYS) {
    throw new RangeError(`${factory}: "maxKeys" must be at most ${MAX_KEYS}, got ${maxKeys}`)
  }
  const maxStates =
    given.maxStates === undefined
      ? 8 * maxKeys
      : readPositiveInteger(factory, 'maxStates', given.maxStates)
  return new InMemoryStore(maxKeys, maxStates, readClock(factory, 'clock', given.clock))
}

/**
 * True for a store made by {@link memoryStore}: one that answers every call synchronously
 * and fills a caller's `TakeBuffer` before it returns, so a caller may reuse one buffer
 * for every take.
 */
export function isMemoryStore(store: unknown): store is MemoryStore {
  return store instanceof InMemoryStore
}

/**
 * A time-based policy's result, from its quota after the decision: written into `into`'s
 * entry at `index` when the caller gave a buffer, else made as one literal with exactly
 * its fields (a receipt when permits were taken, `blocked` while blocked).
 */
function rateResult(
  into: TakeBuffer | undefined,
  index: number,
  policy: Policy,
  quota: Quota,
  admits: boolean,
  allowed: boolean,
  blockedMs: number,
): PolicyResult {
  // A blocked key is shown 0 remaining, so its next quota is the first permit it may take
  // once the block is over, whatever its budget has refilled to meanwhile (the caller has
  // put the wait for one permit in `quota.resetMs`).
  const blocked = blockedMs > 0
  const remaining = blocked ? 0 : quota.available
  const resetMs = blocked ? Math.max(blockedMs, quota.resetMs) : quota.resetMs
  const retryAfterMs = blocked ? Math.max(blockedMs, quota.retryAfterMs) : quota.retryAfterMs
  const receipt = allowed && !blocked ? quota.receipt : undefined
  if (into !== undefined) {
    return fill(
      into,
      index,
      policy,
      admits,
      remaining,
      resetMs,
      retryAfterMs,
      undefined,
      receipt,
      blocked,
    )
  }
  if (blocked) {
    return {
      policy,
      allowed: admits,
      limit: policy.limit,
      remaining,
      resetMs,
      retryAfterMs,
      blocked,
    }
  }
  if (receipt !== undefined) {
    return {
      policy,
      allowed: admits,
      limit: policy.limit,
      remaining,
      resetMs,
      retryAfterMs,
      receipt,
    }
  }
  return { policy, allowed: admits, limit: policy.limit, remaining, resetMs, retryAfterMs }
}

/** A concurrency policy's result: no time axis, so no reset and no wait to announce. */
function slotsResult(
  into: TakeBuffer | undefined,
  index: number,
  policy: Policy,
  max: number,
  held: number,
  admits: boolean,
  lease: Lease | undefined,
): PolicyResult {
  const remaining = held < max ? max - held : 0
  if (into !== undefined) {
    return fill(into, index, policy, admits, remaining, 0, 0, lease, undefined, false)
  }
  if (lease !== undefined) {
    return {
      policy,
      allowed: admits,
      limit: policy.limit,
      remaining,
      resetMs: 0,
      retryAfterMs: 0,
      lease,
    }
  }
  return { policy, allowed: admits, limit: policy.limit, remaining, resetMs: 0, retryAfterMs: 0 }
}

/** Writes one policy's result into the caller's buffer, growing it on first use. */
function fill(
  into: TakeBuffer,
  index: number,
  policy: Policy,
  allowed: boolean,
  remaining: number,
  resetMs: number,
  retryAfterMs: number,
  lease: Lease | undefined,
  receipt: number | undefined,
  blocked: boolean,
): PolicyResult {
  let entry = into.results[index]
  if (entry === undefined) {
    entry = {
      policy,
      allowed,
      limit: policy.limit,
      remaining,
      resetMs,
      retryAfterMs,
      lease,
      receipt,
      blocked: blocked || undefined,
    }
    into.results[index] = entry
    return entry
  }
  entry.policy = policy
  entry.allowed = allowed
  entry.limit = policy.limit
  entry.remaining = remaining
  entry.resetMs = resetMs
  entry.retryAfterMs = retryAfterMs
  entry.lease = lease
  entry.receipt = receipt
  entry.blocked = blocked || undefined
  return entry
}

/** The answer of a take: `into` itself when the caller gave one. */
function answer(
  into: TakeBuffer | undefined,
  allowed: boolean,
  results: PolicyResult[] | undefined,
  count: number,
): TakeResult {
  if (into === undefined) return { allowed, results: results! }
  into.allowed = allowed
  // Writing an array's length is slow even when it does not change: only when it does.
  if (into.results.length !== count) into.results.length = count
  return into
}

class InMemoryStore implements MemoryStore {
  readonly carries = true
  readonly #clock: Clock
  readonly #maxKeys: number
  /** Time-based and concurrency tables apart: each kind keeps its own state per key. */
  /** Least recently used first: the order in which tables give up states to the budget. */
  readonly #rates = new Map<string, RateTable>()
  readonly #slots = new Map<string, SlotTable>()
  /** The table of the policy used last: a middleware's requests find theirs at once. */
  #lastPolicy: Policy | undefined
  #lastTable: Table | undefined
  /** What the kernels report a decision into: one per store, read before the next call. */
  readonly #quota: Quota = { available: 0, resetMs: 0, retryAfterMs: 0, receipt: 0 }
  #inFlight = 0
  #leaseSeq = 0
  readonly #budget: Budget
  /** The tables of the call under way: never robbed of a state the call is using. */
  #active: readonly Table[] = []

  constructor(maxKeys: number, maxStates: number, clock: Clock) {
    this.#clock = clock
    this.#maxKeys = maxKeys
    this.#budget = {
      used: 0,
      makeRoom: (inserting) => {
        if (this.#budget.used < maxStates) return
        // The least recently used table that holds a key gives one up; tables left empty
        // go, so policies made per request cannot pile up tables either.
        for (const [id, table] of this.#rates) {
          if (table === inserting || this.#active.includes(table)) continue
          if (table.evictOldest()) {
            if (table.empty) this.#forget(id, table)
            return
          }
          if (table.empty) this.#forget(id, table)
        }
        inserting.evictOldest()
      },
    }
  }

  /** Drops an empty table (its strikes too). */
  #forget(id: string, table: RateTable): void {
    this.#rates.delete(id)
    if (this.#lastTable === table) {
      this.#lastPolicy = undefined
      this.#lastTable = undefined
    }
  }

  get size(): number {
    let size = 0
    for (const table of this.#rates.values()) size += table.index.size
    return size
  }

  get inFlight(): number {
    return this.#inFlight
  }

  take(key: string, policies: readonly Policy[], cost: Cost, into?: TakeBuffer): TakeResult {
    key = bound(key)
    if (policies.length !== 1 || typeof cost !== 'number') {
      return this.#takeAll(key, policies, cost, into)
    }
    if (!(cost >= 1 && Number.isSafeInteger(cost))) checkCost('memoryStore.take', cost, 1)
    const policy = policies[0]!
    const table = this.#table(policy)
    return table instanceof RateTable
      ? this.#takeRate(key, policy, table, cost, into)
      : this.#takeSlots(key, policy, table, cost, into)
  }

  /** One time-based policy, the common case: one clock reading, one kernel call. */
  #takeRate(
    key: string,
    policy: Policy,
    table: RateTable,
    cost: number,
    into: TakeBuffer | undefined,
  ): TakeResult {
    const now = this.#clock.now()
    const { kernel } = table
    const quota = this.#quota
    let row = table.rowOf(key, now)
    let blocked = table.blockedFor(key, now)
    let allowed = false
    if (blocked === 0) {
      // A key without state gets a row once its first take can pass: a refusal leaves
      // nothing behind and evicts nobody.
      if (row === -1 && cost <= kernel.freshPermits) row = table.insert(key, now)
      if (row !== -1) allowed = kernel.take(row, now, cost, quota)
      else kernel.quota(-1, now, cost, false, quota)
      if (!allowed && policy.block !== undefined) {
        blocked = table.strikeTable().strike(key, policy.block, policy.windowMs, now)
      }
    } else {
      kernel.quota(row, now, cost, false, quota)
    }
    if (blocked > 0) quota.resetMs = kernel.wait(row, now, 1)
    if (!allowed && row !== -1) table.dropIfFresh(row, now)
    const result = rateResult(into, 0, policy, quota, allowed, allowed, blocked)
    return answer(into, allowed, into === undefined ? [result] : undefined, 1)
  }

  #takeSlots(
    key: string,
    policy: Policy,
    table: SlotTable,
    cost: number,
    into: TakeBuffer | undefined,
  ): TakeResult {
    const slots = table.slotsOf(key)
    const allowed = slots.held + cost <= policy.limit
    let lease: MemoryLease | undefined
    if (allowed) lease = this.#hold(slots, cost)
    else table.settle(key, slots)
    const result = slotsResult(into, 0, policy, policy.limit, slots.held, allowed, lease)
    return answer(into, allowed, into === undefined ? [result] : undefined, 1)
  }

  #hold(slots: Slots, permits: number): MemoryLease {
    slots.held += permits
    this.#inFlight += permits
    return new MemoryLease(slots, permits, ++this.#leaseSeq)
  }

  #unhold(lease: MemoryLease): void {
    lease.open = false
    lease.slots.held -= lease.permits
    this.#inFlight -= lease.permits
  }

  /**
   * Several policies (or a cost per policy), atomically: every one is checked first, then
   * each takes. Nothing can change in between (one thread), so a refusal normally has
   * nothing to undo.
   */
  #takeAll(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    into: TakeBuffer | undefined,
  ): TakeResult {
    checkCost('memoryStore.take', cost, policies.length)
    const n = policies.length
    const tables = policies.map((policy) => this.#table(policy))
    this.#active = tables
    const now = this.#clock.now()
    const rows = new Array<number>(n).fill(-1)
    const slots = new Array<Slots | undefined>(n)
    const blocked = new Array<number>(n).fill(0)
    const admits = new Array<boolean>(n)
    let allowed = true
    for (let i = 0; i < n; i++) {
      const table = tables[i]!
      const charge = costAt(cost, i)
      if (table instanceof RateTable) {
        const row = table.rowOf(key, now)
        rows[i] = row
        blocked[i] = table.blockedFor(key, now)
        admits[i] = blocked[i] === 0 && table.kernel.fits(row, now, charge)
      } else {
        const held = table.slotsOf(key)
        slots[i] = held
        admits[i] = held.held + charge <= policies[i]!.limit
      }
      if (!admits[i]) allowed = false
    }
    const leases = new Array<MemoryLease | undefined>(n)
    if (allowed) {
      for (let i = 0; i < n; i++) {
        const table = tables[i]!
        const charge = costAt(cost, i)
        if (table instanceof RateTable) {
          if (charge === 0) continue
          if (rows[i] === -1) rows[i] = table.insert(key, now)
          table.kernel.take(rows[i]!, now, charge)
        } else if (charge > 0) {
          leases[i] = this.#hold(slots[i]!, charge)
        }
      }
    } else {
      for (let i = 0; i < n; i++) {
        const { block, windowMs } = policies[i]!
        const table = tables[i]!
        if (!admits[i] && block !== undefined && blocked[i] === 0 && table instanceof RateTable) {
          blocked[i] = table.strikeTable().strike(key, block, windowMs, now)
        }
      }
    }
    const quota = this.#quota
    const results = into === undefined ? new Array<PolicyResult>(n) : undefined
    for (let i = 0; i < n; i++) {
      const table = tables[i]!
      const policy = policies[i]!
      let result: PolicyResult
      if (table instanceof SlotTable) {
        result = slotsResult(into, i, policy, policy.limit, slots[i]!.held, admits[i]!, leases[i])
      } else {
        table.kernel.quota(rows[i]!, now, costAt(cost, i), allowed, quota)
        if (blocked[i]! > 0) quota.resetMs = table.kernel.wait(rows[i]!, now, 1)
        const took = allowed && costAt(cost, i) > 0
        result = rateResult(into, i, policy, quota, admits[i]!, took, blocked[i]!)
      }
      if (results !== undefined) results[i] = result
    }
    for (let i = 0; i < n; i++) {
      const table = tables[i]!
      if (table instanceof SlotTable) table.settle(key, slots[i]!)
      else if (!allowed && rows[i] !== -1) table.dropIfFresh(rows[i]!, now)
    }
    this.#active = []
    return answer(into, allowed, results, n)
  }

  refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts?: readonly (number | undefined)[],
  ): void {
    checkCost('memoryStore.refund', cost, policies.length)
    key = bound(key)
    const now = this.#clock.now()
    for (let i = 0; i < policies.length; i++) {
      const table = this.#table(policies[i]!)
      const charge = costAt(cost, i)
      if (!(table instanceof RateTable) || charge === 0) continue
      const row = table.liveRowOf(key, now)
      // No row: the key went back to fresh or was evicted, so nothing is left to give back.
      if (row === -1) continue
      table.kernel.refund(row, now, charge, receipts?.[i])
    }
  }

  force(key: string, policies: readonly Policy[], cost: Cost): readonly PolicyResult[] {
    key = bound(key)
    checkCost('memoryStore.force', cost, policies.length)
    const now = this.#clock.now()
    for (let i = 0; i < policies.length; i++) {
      const table = this.#table(policies[i]!)
      const charge = costAt(cost, i)
      if (!(table instanceof RateTable) || charge === 0) continue
      let row = table.rowOf(key, now)
      if (row === -1) row = table.insert(key, now)
      table.kernel.force(row, now, charge)
    }
    return this.get(key, policies)
  }

  block(key: string, policies: readonly Policy[], ms: number): void {
    key = bound(key)
    checkBlock('memoryStore.block', ms)
    const now = this.#clock.now()
    for (const policy of policies) {
      const table = this.#table(policy)
      if (table instanceof RateTable) table.strikeTable().block(key, ms, policy.windowMs, now)
    }
  }

  release(key: string, policy: Policy, lease: Lease): void {
    key = bound(key)
    if (!(lease instanceof MemoryLease) || !lease.open || !lease.slots.live) return
    const table = this.#slots.get(policy.state)
    if (table === undefined || table.find(key) !== lease.slots) return
    this.#unhold(lease)
    table.settle(key, lease.slots)
  }

  get(key: string, policies: readonly Policy[]): readonly PolicyResult[] {
    key = bound(key)
    const now = this.#clock.now()
    const quota = this.#quota
    return policies.map((policy) => {
      const table = this.#table(policy)
      if (table instanceof SlotTable) {
        const held = table.find(key)?.held ?? 0
        return slotsResult(
          undefined,
          0,
          policy,
          policy.limit,
          held,
          held + 1 <= policy.limit,
          undefined,
        )
      }
      const row = table.liveRowOf(key, now)
      const blocked = table.blockedFor(key, now)
      const allowed = blocked === 0 && table.kernel.available(row, now) >= 1
      table.kernel.quota(row, now, 1, allowed, quota)
      if (blocked > 0) quota.resetMs = table.kernel.wait(row, now, 1)
      return rateResult(undefined, 0, policy, quota, allowed, false, blocked)
    })
  }

  reset(key: string, policies?: readonly Policy[]): void {
    key = bound(key)
    const tables: (Table | undefined)[] =
      policies === undefined
        ? [...this.#rates.values(), ...this.#slots.values()]
        : policies.map((policy) =>
            isConcurrency(policy) ? this.#slots.get(policy.state) : this.#rates.get(policy.state),
          )
    for (const table of tables) {
      if (table instanceof RateTable) table.delete(key)
      else if (table !== undefined) this.#inFlight -= table.delete(key)
    }
  }

  resetAll(): void {
    for (const table of this.#slots.values()) table.clear()
    this.#rates.clear()
    this.#budget.used = 0
    this.#slots.clear()
    this.#lastPolicy = undefined
    this.#lastTable = undefined
    this.#inFlight = 0
  }

  /**
   * The policy's table, made on first use (it allocates little until keys arrive), with
   * the policy's spec in use. Tables belong to names: a policy of a known name with
   * another spec puts its own kernel in use, and the keys carry over as they are touched.
   */
  #table(policy: Policy): Table {
    if (policy === this.#lastPolicy) return this.#lastTable!
    let table: Table | undefined
    if (isConcurrency(policy)) {
      table = this.#slots.get(policy.state)
      if (table === undefined) {
        table = new SlotTable(this.#maxKeys)
        this.#slots.set(policy.state, table)
      }
    } else {
      table = this.#rates.get(policy.state)
      if (table === undefined) {
        table = new RateTable(policy, this.#maxKeys, this.#budget, this.#clock.now())
      } else {
        table.use(policy, this.#clock.now())
        this.#rates.delete(policy.state)
      }
      // Now the most recently used.
      this.#rates.set(policy.state, table)
    }
    this.#lastPolicy = policy
    this.#lastTable = table
    return table
  }
}
