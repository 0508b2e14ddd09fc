import type { NormalizedRateSpec } from '@sluice/core'
import { type Clock, type Duration, systemClock } from '@sluice/core'
import { rateKernel } from '@sluice/core/internal'
import { rangeError, readClock, readOptions, readPositiveDuration } from '@sluice/core/validation'
import { checkCost, costAt } from './call-checks'
import { andThen, isPromiseLike, type MaybePromise } from './maybe-promise'
import type { Cost, Lease, Policy, PolicyResult, Store, TakeBuffer, TakeResult } from './store'

/** Options of {@link withLeases} (the `lease` option of a remote store). */
export interface LeaseOptions {
  /**
   * Fraction of a policy's capacity (its limit, or a bucket's capacity) one process takes
   * in one store call: the lease's block. Default 0.001. A policy whose block would be under
   * 2 permits is not leased: each of its decisions stays one exact store call.
   */
  share?: number
  /** How long a block is used before what is left of it goes back to the store. Default `'1s'`. */
  ttl?: Duration
  /**
   * Bulkhead slots one process holds at once per key, handed out locally. Default
   * `share` × `max`, rounded down (under 2: slots are not leased).
   */
  slots?: number
  /** The local clock that ends leases (a `ManualClock` in tests). Default `systemClock`. */
  clock?: Clock
}

/** A store wrapped by {@link withLeases}. */
export interface LeasedStore extends Store {
  /**
   * Ends every lease now, giving unspent permits, refunds owed and idle slots back (before
   * a process exits, or its client closes): resolves once the store has answered them.
   */
  flush(): Promise<void>
  /**
   * Ends the leases whose `ttl` is over now, refunding what is left: a timer does this
   * every `ttl` on the system clock; with another clock (a `ManualClock`), call it.
   */
  expire(): void
}

/** A lease's block is at most this fraction of what the store reported left: leases shrink near the limit. */
const OF_REMAINING = 8
const NONE = Number.NEGATIVE_INFINITY

/**
 * Wraps a shared store with quota leases: a process takes a block of permits for a key in
 * one store call (a take costing the block) and decides locally until the block is spent
 * or its `ttl` ends; unspent permits are then refunded. A block is at most `share` of the
 * policy's capacity and at most an eighth of what the store last reported left, so near
 * the limit every decision is one exact store call again. A refusal is kept locally until
 * the store's `retryAfterMs` (at most `ttl`). Bulkhead slots are leased the same way
 * (`slots`). Calls a lease cannot serve exactly (several policies mixing a bulkhead and
 * time-based ones, policies with a penalty) go to the store as they are.
 *
 * Refunds: a fixed window's permits of the block's own window come back to the block;
 * every other refund goes to the store (with the entry's next call, or when its lease ends).
 *
 * Overshoot (admitted beyond the limit in any window, N processes, block B =
 * floor(share × capacity)): 0 for a fixed window (a block never outlives its window) and a
 * bulkhead; N × B for sliding windows, token buckets and warm-up (a process never holds
 * more than B, whatever its refunds); a leaky bucket (capacity 1) is never leased.
 *
 * @example
 * ```ts
 * const store = withLeases(redisBacked, { share: 0.001, ttl: '1s' }, 'redisStore')
 * ```
 */
export function withLeases(store: Store, options: LeaseOptions, name = 'withLeases'): LeasedStore {
  const given = readOptions(`${name}`, options, ['share', 'ttl', 'slots', 'clock'])
  const share = given.share === undefined ? 0.001 : given.share
  if (typeof share !== 'number' || !(share > 0 && share <= 1)) {
    throw rangeError(name, 'lease.share', 'must be a number above 0 and at most 1', share)
  }
  const ttlMs = readPositiveDuration(name, 'lease.ttl', given.ttl, '1s')
  const slots = given.slots
  if (slots !== undefined && !(Number.isSafeInteger(slots) && slots >= 0)) {
    throw rangeError(name, 'lease.slots', 'must be a non-negative safe integer', slots)
  }
  const clock =
    given.clock === undefined ? systemClock : readClock(name, 'lease.clock', given.clock)
  const leased = new Leases(store, share, ttlMs, slots, clock, name)
  // Everything the wrapped store offers beyond `Store` (a Redis store's `status`) stays reachable.
  const bound = new Map<PropertyKey, unknown>()
  return new Proxy(leased, {
    get(target, prop) {
      const own = prop in target
      // A settle goes through this layer's refund and force: the wrapped store's one
      // call would give back the permits of a leased block there as well.
      if (prop === 'settle' && !own) return undefined
      const from: object = own ? target : store
      const value = Reflect.get(from, prop, from)
      if (typeof value !== 'function') return value
      let method = bound.get(prop)
      if (method === undefined) {
        method = value.bind(from)
        bound.set(prop, method)
      }
      return method
    },
  }) as LeasedStore
}

/** The permits a time-based lease holds for one key and one list of policies. */
interface RateEntry {
  readonly key: string
  readonly policies: readonly Policy[]
  /** Per policy: permits of the block not yet spent. */
  left: number[]
  /** Per policy: what this process took in the block's window (fixed windows: what a local refund may give back at most). */
  size: number[]
  /** Per policy: what the store reported left once the block was taken. */
  base: number[]
  resetMs: number[]
  receipts: (number | undefined)[]
  /** Local time the block's call was sent: its times count from then. */
  sentAt: number
  expiresAt: number
  /** A refusal kept locally until then, for costs at least `refusedCost`. */
  refusedUntil: number
  refusedCost: number[]
  refusal: TakeResult | undefined
  /** Per policy: the next block's size (0: exact calls). */
  target: number[]
  pending: PromiseLike<unknown> | undefined
  /**
   * Refunds owed to the store (one receipt list), sent with the entry's next store call or
   * when its lease ends: a refund taken back into the block would let a permit counted
   * long ago be spent again now, beyond any bound.
   */
  owed: number[] | undefined
  owedReceipts: readonly (number | undefined)[]
}

/** Slots of a bulkhead one store lease holds, handed out locally. */
interface SlotBlock {
  readonly lease: Lease
  readonly size: number
  held: number
  readonly expiresAt: number
  released: boolean
}

interface SlotEntry {
  readonly key: string
  readonly policy: Policy
  blocks: SlotBlock[]
  base: number
  target: number
  pending: PromiseLike<unknown> | undefined
}

/** A slot handed out from a leased block: releasing it frees it locally. */
class LocalSlot implements Lease {
  readonly id: string
  readonly permits: number
  readonly block: SlotBlock
  open = true

  constructor(id: string, permits: number, block: SlotBlock) {
    this.id = id
    this.permits = permits
    this.block = block
  }
}

/**
 * A cost as the store is asked: one number for one policy, so a store keeps its fast path
 * for one policy and one cost (Redis runs the algorithm's own small script then).
 */
const charge = (costs: number[]): Cost => (costs.length === 1 ? costs[0]! : costs)

const signature = (policies: readonly Policy[]): string =>
  policies.length === 1 ? policies[0]!.id : policies.map((policy) => policy.id).join('\u0000')

const isFixedWindow = (policy: Policy): boolean => policy.spec.algorithm === 'fixed-window'

const sameReceipts = (
  a: readonly (number | undefined)[],
  b: readonly (number | undefined)[],
): boolean => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * Whether a refund names the receipt of every policy: one without (a `reward`) credits
 * whatever the store holds when it arrives, so it goes to the store at once, as without leases.
 */
const fullReceipts = (
  receipts: readonly (number | undefined)[] | undefined,
  n: number,
): receipts is readonly (number | undefined)[] => {
  if (receipts === undefined || receipts.length !== n) return false
  for (const receipt of receipts) if (receipt === undefined) return false
  return true
}

class Leases implements LeasedStore {
  readonly #store: Store
  readonly #share: number
  readonly #ttlMs: number
  readonly #slots: number | undefined
  readonly #clock: Clock
  /** Per key, per policy list: the leases this process holds. */
  readonly #rates = new Map<string, Map<string, RateEntry>>()
  readonly #slotEntries = new Map<string, Map<string, SlotEntry>>()
  /**
   * Largest block per policy (0: not leased), kept by the policy object so that a process
   * making policies on the fly (a limit per tenant) keeps nothing once they are gone.
   */
  readonly #blocks = new WeakMap<Policy, number>()
  /** Whether the store answers with promises: local answers then do too (an `AsyncStore` stays one). */
  #async = false
  #sweeper: ReturnType<typeof setInterval> | undefined
  /** Refunds and releases sent and not answered yet. */
  readonly #handing = new Set<Promise<void>>()
  #slotSeq = 0
  readonly #name: string

  constructor(
    store: Store,
    share: number,
    ttlMs: number,
    slots: number | undefined,
    clock: Clock,
    name: string,
  ) {
    this.#name = name
    this.#store = store
    this.#share = share
    this.#ttlMs = ttlMs
    this.#slots = slots
    this.#clock = clock
  }

  /** The largest block of a policy: `share` of its capacity (slots: `slots` or `share` of `max`). */
  #blockOf(policy: Policy): number {
    let block = this.#blocks.get(policy)
    if (block === undefined) {
      if (policy.spec.algorithm === 'concurrency') {
        block = Math.min(this.#slots ?? Math.floor(this.#share * policy.limit), policy.limit)
      } else if (policy.block !== undefined) {
        // A penalty counts refusals in the store: a block refused, or a refusal kept locally,
        // would count differently from exact decisions.
        block = 0
      } else {
        block = Math.floor(this.#share * rateKernel(policy.spec as NormalizedRateSpec).capacity)
      }
      if (block < 2) block = 0
      this.#blocks.set(policy, block)
    }
    return block
  }

  #answer<T>(value: T): MaybePromise<T> {
    return this.#async ? Promise.resolve(value) : value
  }

  #seen<T>(value: MaybePromise<T>): MaybePromise<T> {
    if (isPromiseLike(value)) this.#async = true
    return value
  }

  /** Whether the store says it is down (a Redis store's `status`): no new leases then. */
  #down(): boolean {
    return (this.#store as { status?: unknown }).status === 'down'
  }

  take(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    into?: TakeBuffer,
  ): MaybePromise<TakeResult> {
    const n = policies.length
    if (n === 0) return this.#seen(this.#store.take(key, policies, cost, into))
    let rate = true
    for (let i = 0; i < n; i++) {
      const policy = policies[i]!
      if (this.#blockOf(policy) === 0)
        return this.#seen(this.#store.take(key, policies, cost, into))
      if (policy.spec.algorithm === 'concurrency') rate = false
    }
    checkCost(`${this.#name}.take`, cost, n)
    if (rate) return this.#takeRate(key, policies, cost)
    if (n === 1 && typeof cost === 'number') return this.#takeSlots(key, policies[0]!, cost)
    return this.#seen(this.#store.take(key, policies, cost, into))
  }

  #rateEntry(key: string, policies: readonly Policy[]): RateEntry {
    let byKey = this.#rates.get(key)
    if (byKey === undefined) {
      byKey = new Map()
      this.#rates.set(key, byKey)
    }
    const sig = signature(policies)
    let entry = byKey.get(sig)
    if (entry === undefined) {
      const n = policies.length
      entry = {
        key,
        policies,
        left: new Array<number>(n).fill(0),
        size: new Array<number>(n).fill(0),
        base: new Array<number>(n).fill(0),
        resetMs: new Array<number>(n).fill(0),
        receipts: new Array<number | undefined>(n).fill(undefined),
        sentAt: NONE,
        expiresAt: NONE,
        refusedUntil: NONE,
        refusedCost: new Array<number>(n).fill(0),
        refusal: undefined,
        target: policies.map((policy) => this.#blockOf(policy)),
        pending: undefined,
        owed: undefined,
        owedReceipts: [],
      }
      byKey.set(sig, entry)
      this.#startSweeping()
    }
    return entry
  }

  #takeRate(key: string, policies: readonly Policy[], cost: Cost): MaybePromise<TakeResult> {
    const entry = this.#rateEntry(key, policies)
    const now = this.#clock.now()
    const n = policies.length
    if (now < entry.expiresAt) {
      let fits = true
      for (let i = 0; i < n; i++) if (entry.left[i]! < costAt(cost, i)) fits = false
      if (fits) {
        for (let i = 0; i < n; i++) entry.left[i]! -= costAt(cost, i)
        const result = this.#localResult(entry, now)
        if (entry.pending === undefined) this.#topUp(entry, now)
        return this.#answer(result)
      }
    }
    if (entry.pending !== undefined) {
      return entry.pending.then(() => this.#takeRate(key, policies, cost))
    }
    if (now < entry.refusedUntil) {
      let covered = true
      for (let i = 0; i < n; i++) if (costAt(cost, i) < entry.refusedCost[i]!) covered = false
      if (covered) return this.#answer(this.#keptRefusal(entry, now))
    }
    return this.#renew(entry, cost, now)
  }

  /**
   * Once three quarters of a block are spent, takes what it lacks (in the background: decisions go on
   * from what is left meanwhile), so a hot key never waits for the store while it holds
   * quota. A process never holds more than one block's worth: the bound stays N × B. The
   * lease still ends when its first block's time is up.
   */
  #topUp(entry: RateEntry, sentAt: number): void {
    const n = entry.policies.length
    const missing = new Array<number>(n)
    let low = false
    let any = false
    for (let i = 0; i < n; i++) {
      const target = entry.target[i]!
      missing[i] = Math.max(0, target - entry.left[i]!)
      if (missing[i]! > 0) any = true
      if (4 * entry.left[i]! < target) low = true
    }
    if (!low || !any || this.#down()) return
    this.#payOwed(entry)
    let asked: MaybePromise<TakeResult>
    try {
      asked = this.#seen(this.#store.take(entry.key, entry.policies, charge(missing)))
    } catch {
      return
    }
    const settle = (result: TakeResult): void => {
      entry.pending = undefined
      this.#shrink(entry, result)
      if (!result.allowed) return
      if (this.#clock.now() < entry.expiresAt) {
        for (let i = 0; i < n; i++) {
          const got = result.results[i]!
          entry.left[i]! += missing[i]!
          entry.size[i]! += missing[i]!
          entry.base[i] = got.remaining
          entry.receipts[i] = got.receipt ?? entry.receipts[i]
        }
        return
      }
      // The lease ended while the call was out: these permits are a block of their own.
      this.#refundLeft(entry)
      this.#hold(entry, result, missing, 0, sentAt)
    }
    if (!isPromiseLike(asked)) {
      settle(asked)
      return
    }
    entry.pending = Promise.resolve(asked).then(settle, () => {
      entry.pending = undefined
    })
  }

  /** The next block's size: at most `share` of capacity and an eighth of what the store has left. */
  #shrink(entry: RateEntry, result: TakeResult): void {
    for (let i = 0; i < entry.policies.length; i++) {
      const remaining = result.results[i]?.remaining ?? 0
      entry.target[i] = Math.min(
        this.#blockOf(entry.policies[i]!),
        Math.floor(remaining / OF_REMAINING),
      )
    }
  }

  /**
   * Gives back what is left of the entry's block and the refunds it owes, in one call when
   * they name the same receipts (fire and forget: a failed refund loses permits, never adds).
   */
  #refundLeft(entry: RateEntry): void {
    const owed = entry.owed
    entry.owed = undefined
    let given: number[] | undefined
    if (owed !== undefined && sameReceipts(entry.owedReceipts, entry.receipts)) given = owed
    else if (owed !== undefined) this.#sendRefund(entry, owed, entry.owedReceipts)
    for (let i = 0; i < entry.left.length; i++) {
      const left = entry.left[i]!
      if (left <= 0) continue
      given ??= new Array<number>(entry.left.length).fill(0)
      given[i]! += left
    }
    // A copy: the entry's receipts change with its next block, and a store may read them
    // only once the call goes out (a batching client, a store behind an await).
    if (given !== undefined) this.#sendRefund(entry, given, entry.receipts.slice())
    entry.left.fill(0)
    entry.expiresAt = NONE
  }

  /** Sends the refunds the entry owes now (before it takes from the store again). */
  #payOwed(entry: RateEntry): void {
    const owed = entry.owed
    if (owed === undefined) return
    entry.owed = undefined
    this.#sendRefund(entry, owed, entry.owedReceipts)
  }

  #sendRefund(entry: RateEntry, given: number[], receipts: readonly (number | undefined)[]): void {
    this.#quietly(() => this.#store.refund(entry.key, entry.policies, charge(given), receipts))
  }

  #quietly(call: () => MaybePromise<unknown>): void {
    try {
      const done = call()
      if (!isPromiseLike(done)) return
      // Kept until answered, so that `flush` can wait for it.
      const answered: Promise<void> = Promise.resolve(done).then(
        () => {
          this.#handing.delete(answered)
        },
        () => {
          this.#handing.delete(answered)
        },
      )
      this.#handing.add(answered)
    } catch {
      // A refund or release that fails gives nothing back: the bound holds all the same.
    }
  }

  /** Takes a new block (or, when no block fits or the store is down, exactly `cost`). */
  #renew(entry: RateEntry, cost: Cost, now: number, exactly = false): MaybePromise<TakeResult> {
    this.#refundLeft(entry)
    const n = entry.policies.length
    // A key not asked for within the last ttl takes only its cost: a block (and its refund)
    // pays off only for a key asked for again, and most keys of a large key space are not.
    const cold = !(now - entry.sentAt < this.#ttlMs)
    const exact = exactly || cold || this.#down()
    const blocks = new Array<number>(n)
    let larger = false
    for (let i = 0; i < n; i++) {
      const charge = costAt(cost, i)
      blocks[i] = exact ? charge : Math.max(charge, entry.target[i]!)
      if (blocks[i]! > charge) larger = true
    }
    const asked = this.#seen(this.#store.take(entry.key, entry.policies, charge(blocks)))
    const settle = (result: TakeResult): MaybePromise<TakeResult> => {
      entry.pending = undefined
      this.#shrink(entry, result)
      if (result.allowed) {
        this.#hold(entry, result, blocks, cost, now)
        return this.#localResult(entry, now)
      }
      if (larger) return this.#renew(entry, cost, now, true)
      this.#keepRefusal(entry, result, cost, now)
      return result
    }
    if (!isPromiseLike(asked)) return settle(asked)
    const pending = Promise.resolve(asked).then(settle, (error: unknown) => {
      entry.pending = undefined
      throw error
    })
    entry.pending = pending.then(
      () => undefined,
      () => undefined,
    )
    return pending
  }

  #hold(entry: RateEntry, result: TakeResult, blocks: number[], cost: Cost, sentAt: number): void {
    let ends = sentAt + this.#ttlMs
    for (let i = 0; i < blocks.length; i++) {
      const got = result.results[i]!
      entry.size[i] = blocks[i]!
      entry.left[i] = blocks[i]! - costAt(cost, i)
      entry.base[i] = got.remaining
      entry.resetMs[i] = got.resetMs
      entry.receipts[i] = got.receipt
      // A fixed window's permits count in their window only: the block ends with it (its
      // resetMs is the time to the window's end, counted from before the call was sent).
      if (entry.policies[i]!.spec.algorithm === 'fixed-window' && got.resetMs > 0) {
        ends = Math.min(ends, sentAt + got.resetMs)
      }
    }
    entry.sentAt = sentAt
    entry.expiresAt = ends
    entry.refusedUntil = NONE
    entry.refusal = undefined
  }

  #keepRefusal(entry: RateEntry, result: TakeResult, cost: Cost, sentAt: number): void {
    let wait = 0
    for (const got of result.results) if (!got.allowed) wait = Math.max(wait, got.retryAfterMs)
    entry.refusedUntil = sentAt + Math.min(wait, this.#ttlMs)
    entry.sentAt = sentAt
    entry.refusal = result
    for (let i = 0; i < entry.policies.length; i++) entry.refusedCost[i] = costAt(cost, i)
  }

  /** An admission from the block: remaining is what the store reported plus what this process still holds. */
  #localResult(entry: RateEntry, now: number): TakeResult {
    const elapsed = now - entry.sentAt
    const results = entry.policies.map(
      (policy, i): PolicyResult => ({
        policy,
        allowed: true,
        limit: policy.limit,
        remaining: entry.base[i]! + entry.left[i]!,
        resetMs: Math.max(0, entry.resetMs[i]! - elapsed),
        retryAfterMs: 0,
        receipt: entry.receipts[i],
      }),
    )
    return { allowed: true, results }
  }

  /** The store's refusal, its times counted down since it was given. */
  #keptRefusal(entry: RateEntry, now: number): TakeResult {
    const elapsed = now - entry.sentAt
    const refusal = entry.refusal!
    const results = refusal.results.map(
      (got): PolicyResult => ({
        ...got,
        resetMs: Math.max(0, got.resetMs - elapsed),
        retryAfterMs: got.retryAfterMs === 0 ? 0 : Math.max(0, got.retryAfterMs - elapsed),
      }),
    )
    return { allowed: false, results }
  }

  #slotEntry(key: string, policy: Policy): SlotEntry {
    let byKey = this.#slotEntries.get(key)
    if (byKey === undefined) {
      byKey = new Map()
      this.#slotEntries.set(key, byKey)
    }
    let entry = byKey.get(policy.id)
    if (entry === undefined) {
      entry = {
        key,
        policy,
        blocks: [],
        base: 0,
        target: this.#blockOf(policy),
        pending: undefined,
      }
      byKey.set(policy.id, entry)
      this.#startSweeping()
    }
    return entry
  }

  #takeSlots(key: string, policy: Policy, cost: number): MaybePromise<TakeResult> {
    const entry = this.#slotEntry(key, policy)
    if (entry.pending !== undefined)
      return entry.pending.then(() => this.#takeSlots(key, policy, cost))
    const now = this.#clock.now()
    for (const block of entry.blocks) {
      if (now < block.expiresAt && block.size - block.held >= cost) {
        block.held += cost
        const slot = new LocalSlot(`leased:${++this.#slotSeq}`, cost, block)
        return this.#answer(this.#slotResult(entry, policy, true, slot))
      }
    }
    return this.#renewSlots(entry, cost, now)
  }

  #slotResult(entry: SlotEntry, policy: Policy, allowed: boolean, lease: Lease): TakeResult {
    let free = 0
    for (const block of entry.blocks) free += block.size - block.held
    const result: PolicyResult = {
      policy,
      allowed,
      limit: policy.limit,
      remaining: Math.min(policy.limit, entry.base + free),
      resetMs: 0,
      retryAfterMs: 0,
      lease,
    }
    return { allowed, results: [result] }
  }

  #renewSlots(
    entry: SlotEntry,
    cost: number,
    now: number,
    exactly = false,
  ): MaybePromise<TakeResult> {
    this.#releaseIdle(entry, now)
    const size = exactly || this.#down() ? cost : Math.max(cost, entry.target)
    const asked = this.#seen(this.#store.take(entry.key, [entry.policy], size))
    const settle = (result: TakeResult): MaybePromise<TakeResult> => {
      entry.pending = undefined
      const got = result.results[0]
      entry.base = got?.remaining ?? 0
      entry.target = Math.min(this.#blockOf(entry.policy), Math.floor(entry.base / OF_REMAINING))
      if (!result.allowed) return size > cost ? this.#renewSlots(entry, cost, now, true) : result
      if (size === cost) return result
      const block: SlotBlock = {
        lease: got!.lease!,
        size,
        held: cost,
        expiresAt: now + this.#ttlMs,
        released: false,
      }
      entry.blocks.push(block)
      const slot = new LocalSlot(`leased:${++this.#slotSeq}`, cost, block)
      return this.#slotResult(entry, entry.policy, true, slot)
    }
    if (!isPromiseLike(asked)) return settle(asked)
    const pending = Promise.resolve(asked).then(settle, (error: unknown) => {
      entry.pending = undefined
      throw error
    })
    entry.pending = pending.then(
      () => undefined,
      () => undefined,
    )
    return pending
  }

  /** Gives expired blocks with nothing in flight back to the store. */
  #releaseIdle(entry: SlotEntry, now: number): void {
    entry.blocks = entry.blocks.filter((block) => {
      if (now < block.expiresAt || block.held > 0) return true
      this.#giveBack(entry, block)
      return false
    })
  }

  #giveBack(entry: SlotEntry, block: SlotBlock): void {
    if (block.released) return
    block.released = true
    this.#quietly(() => this.#store.release(entry.key, entry.policy, block.lease))
  }

  release(key: string, policy: Policy, lease: Lease): MaybePromise<void> {
    if (!(lease instanceof LocalSlot)) return this.#seen(this.#store.release(key, policy, lease))
    if (!lease.open) return this.#answer(undefined)
    lease.open = false
    const { block } = lease
    block.held -= lease.permits
    if (block.held === 0 && this.#clock.now() >= block.expiresAt) {
      const entry = this.#slotEntries.get(key)?.get(policy.id)
      if (entry !== undefined) {
        entry.blocks = entry.blocks.filter((kept) => kept !== block)
        this.#giveBack(entry, block)
      }
    }
    return this.#answer(undefined)
  }

  refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts?: readonly (number | undefined)[],
  ): MaybePromise<void> {
    const entry = this.#rates.get(key)?.get(signature(policies))
    if (entry !== undefined) {
      // Permits come back: the store may admit again, so a refusal kept here is dropped.
      entry.refusedUntil = NONE
      entry.refusal = undefined
      if (this.#clock.now() < entry.expiresAt && fullReceipts(receipts, policies.length)) {
        checkCost(`${this.#name}.refund`, cost, policies.length)
        return this.#answer(this.#refundHeld(entry, cost, receipts))
      }
    }
    return this.#seen(this.#store.refund(key, policies, cost, receipts))
  }

  /**
   * A refund while the entry holds a lease. A fixed window's permits of the block's own
   * window come back to the block (they are spent again in the window they were counted
   * in). Any other permit goes back to the store, with its receipt: taken back locally, a
   * permit counted in a slot (or bucket period) long gone would be spent again now, and a
   * process could keep re-spending what it took before a window began, far beyond B.
   * Those refunds wait for the entry's next store call, or its lease's end (at most `ttl`),
   * so a refund per decision does not cost a store call per decision.
   */
  #refundHeld(entry: RateEntry, cost: Cost, receipts: readonly (number | undefined)[]): void {
    const n = entry.policies.length
    if (sameReceipts(receipts, entry.receipts) && entry.policies.every(isFixedWindow)) {
      for (let i = 0; i < n; i++) {
        entry.left[i] = Math.min(entry.size[i]!, entry.left[i]! + costAt(cost, i))
      }
      return
    }
    if (entry.owed !== undefined && !sameReceipts(receipts, entry.owedReceipts)) {
      this.#payOwed(entry)
    }
    if (entry.owed === undefined) {
      entry.owed = new Array<number>(n).fill(0)
      entry.owedReceipts = receipts.slice()
    }
    for (let i = 0; i < n; i++) entry.owed[i]! += costAt(cost, i)
  }

  force(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
  ): MaybePromise<readonly PolicyResult[]> {
    return this.#seen(this.#store.force(key, policies, cost))
  }

  block(key: string, policies: readonly Policy[], ms: number): MaybePromise<void> {
    // A blocked key is refused by the store: what this process holds for it goes back.
    const byKey = this.#rates.get(key)
    if (byKey !== undefined) for (const entry of byKey.values()) this.#refundLeft(entry)
    return this.#seen(this.#store.block(key, policies, ms))
  }

  get(key: string, policies: readonly Policy[]): MaybePromise<readonly PolicyResult[]> {
    const got = this.#seen(this.#store.get(key, policies))
    const adjust = (results: readonly PolicyResult[]): readonly PolicyResult[] => {
      const entry = this.#rates.get(key)?.get(signature(policies))
      if (entry === undefined || this.#clock.now() >= entry.expiresAt) return results
      return results.map((result, i) =>
        entry.left[i]! > 0
          ? {
              ...result,
              remaining: result.remaining + entry.left[i]!,
              allowed: true,
              retryAfterMs: 0,
            }
          : result,
      )
    }
    return andThen(got, adjust)
  }

  reset(key: string, policies?: readonly Policy[]): MaybePromise<void> {
    // The store forgets the key: nothing this process holds for it is given back.
    this.#rates.delete(key)
    this.#slotEntries.delete(key)
    return this.#seen(this.#store.reset(key, policies))
  }

  resetAll(): MaybePromise<void> {
    this.#rates.clear()
    this.#slotEntries.clear()
    return this.#seen(this.#store.resetAll())
  }

  /** Ends leases past their time (and, with `all`, every lease), dropping idle entries. */
  #sweep(all: boolean): void {
    const now = this.#clock.now()
    for (const [key, byKey] of this.#rates) {
      for (const [sig, entry] of byKey) {
        if (entry.pending !== undefined) continue
        if (all || now >= entry.expiresAt) this.#refundLeft(entry)
        if (now >= entry.refusedUntil && entry.expiresAt === NONE) byKey.delete(sig)
      }
      if (byKey.size === 0) this.#rates.delete(key)
    }
    for (const [key, byKey] of this.#slotEntries) {
      for (const [id, entry] of byKey) {
        if (entry.pending !== undefined) continue
        entry.blocks = entry.blocks.filter((block) => {
          if (block.held > 0 || (!all && now < block.expiresAt)) return true
          this.#giveBack(entry, block)
          return false
        })
        if (entry.blocks.length === 0) byKey.delete(id)
      }
      if (byKey.size === 0) this.#slotEntries.delete(key)
    }
    if (this.#rates.size === 0 && this.#slotEntries.size === 0 && this.#sweeper !== undefined) {
      clearInterval(this.#sweeper)
      this.#sweeper = undefined
    }
  }

  /** Leases end on time even for keys no longer asked for: one timer per store, while it holds any. */
  #startSweeping(): void {
    if (this.#sweeper !== undefined || this.#clock !== systemClock) return
    // setInterval fires at once for anything longer than 2^31 − 1 ms.
    this.#sweeper = setInterval(() => this.#sweep(false), Math.min(this.#ttlMs, 2 ** 31 - 1))
    this.#sweeper.unref?.()
  }

  /** Ends leases past their time now (what the timer does; with a `ManualClock`, call it). */
  expire(): void {
    this.#sweep(false)
  }

  async flush(): Promise<void> {
    const pending: PromiseLike<unknown>[] = []
    for (const byKey of this.#rates.values()) {
      for (const entry of byKey.values()) if (entry.pending) pending.push(entry.pending)
    }
    await Promise.all(pending)
    this.#sweep(true)
    await Promise.all(this.#handing)
  }
}
