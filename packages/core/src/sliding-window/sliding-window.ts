import { type AlgorithmDefinition, buildLimiter } from '../algorithm'
import type { Quota } from '../kernel'
import { invalidPermits, isPermitCount, nudge } from '../options'
import type {
  Clock,
  NormalizedSpec,
  PortableRateLimiter,
  RateLimiter,
  SlidingWindowOptions,
  WaitOptions,
} from '../types'
import { readInteger, readPositiveDuration, readPositiveInteger } from '../validation'
import { type Waitable, WaitQueue } from '../wait-queue'

type SlidingWindowSpec = Extract<NormalizedSpec, { algorithm: 'sliding-window' }>

/** Most slots a window may be cut into: every key keeps `slots + 1` counters. */
const MAX_SLOTS = 10_000

/** Counts of a sliding window: the narrowest unsigned integers that hold its limit. */
export type Counts = Uint8Array | Uint16Array | Uint32Array | Float64Array

/**
 * An array of `length` zeroed counts wide enough for `limit`. A ring's counts and their
 * sum never exceed the limit (a take is refused first), so a window of 100 keeps bytes.
 *
 * @example
 * ```ts
 * countArray(100, 12) // Uint8Array(12)
 * ```
 */
export function countArray(limit: number, length: number): Counts {
  if (limit <= 0xff) return new Uint8Array(length)
  if (limit <= 0xffff) return new Uint16Array(length)
  if (limit <= 0xffff_ffff) return new Uint32Array(length)
  return new Float64Array(length)
}

export class SlidingWindowLimiter implements PortableRateLimiter, Waitable {
  readonly name: string
  readonly limit: number
  readonly windowMs: number
  readonly slots: number
  private readonly clock: Clock
  /** Counts per ring: `slots + 1` generations; the ring's sum follows them. */
  private readonly ring: number
  // A ring of slots + 1 counts for consecutive generations (absolute slot numbers), the
  // newest being `head`, then their sum. The rolling window (now − window, now] overlaps
  // the current slot and, partly, the `slots` before it; older generations are ignored,
  // and moving `head` forward zeroes the buckets it claims. Memory is fixed, whatever the
  // traffic: `slots + 2` small integers and one number. The ring sits at `base` in
  // `counts`: its own array for a limiter, one row of a slab shared by many keys for a
  // store's keyed kernel (`keyed.ts`), which binds a key's row here to decide for it.
  counts: Counts
  base = 0
  head = Number.NEGATIVE_INFINITY
  // Made on the first `acquire`: most limiters (one per client key in a store) never wait.
  private queue: WaitQueue | undefined

  constructor(name: string, clock: Clock, limit: number, windowMs: number, slots: number) {
    this.name = name
    this.clock = clock
    this.limit = limit
    this.windowMs = windowMs
    this.slots = slots
    this.ring = slots + 1
    this.counts = countArray(limit, slots + 2)
  }

  /** Decides on the ring at `base` in `counts` whose newest generation is `head`. */
  bindRing(counts: Counts, base: number, head: number): void {
    this.counts = counts
    this.base = base
    this.head = head
  }

  // Multiplying before dividing keeps slot boundaries exact for integral windows. A clock
  // is monotonic, so `head` is never ahead of now; should one step back, the ring's newest
  // generation stands for now, so nothing is ever counted outside the ring.
  private generationAt(ms: number): number {
    const generation = Math.floor((ms * this.slots) / this.windowMs)
    return Math.max(generation, this.head)
  }

  private indexOf(generation: number): number {
    // Generations are integers, usually small and positive: as int32 the remainder is an
    // integer division, where a double's is a call to fmod.
    if (generation >= 0 && generation <= 0x7fff_ffff)
      return this.base + ((generation | 0) % this.ring)
    const slot = generation % this.ring
    return this.base + (slot < 0 ? slot + this.ring : slot)
  }

  /** The count of `generation`, or 0 when the ring no longer (or not yet) holds it. */
  private countOf(generation: number): number {
    if (generation > this.head || generation <= this.head - this.ring) return 0
    return this.counts[this.indexOf(generation)] as number
  }

  /**
   * Permits counted in the window ending with `generation` (never before `head`): the
   * ring's sum, less the generations that have left the window since `head`.
   */
  private usedAt(generation: number): number {
    const head = this.head
    const sum = this.counts[this.base + this.ring] as number
    if (generation === head) return sum
    if (generation - head > this.slots) return 0
    // Walk the ring from its oldest generation (head − slots) up to those still counted.
    const counts = this.counts
    const end = this.base + this.ring
    let used = sum
    let i = this.indexOf(head - this.slots)
    for (let g = head - this.slots; g < generation - this.slots; g++) {
      used -= counts[i] as number
      if (++i === end) i = this.base
    }
    return used
  }

  /** Moves `head` forward to `generation`, zeroing the buckets of the generations it claims. */
  private claim(generation: number): void {
    const head = this.head
    if (generation <= head) return
    const counts = this.counts
    const sumAt = this.base + this.ring
    let sum = counts[sumAt] as number
    const first = Math.max(head + 1, generation - this.ring + 1)
    let i = this.indexOf(first)
    for (let g = first; g <= generation; g++) {
      sum -= counts[i] as number
      counts[i] = 0
      if (++i === sumAt) i = this.base
    }
    counts[sumAt] = sum
    this.head = generation
  }

  private get waiting(): boolean {
    return this.queue !== undefined && this.queue.size !== 0
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits('slidingWindow.tryAcquire', permits)
    }
    // Queued waiters go first (FIFO): a stream of tryAcquire calls cannot starve them.
    if (this.waiting) return false
    return this.take(permits)
  }

  take(permits: number): boolean {
    const generation = this.generationAt(this.clock.now())
    if (this.usedAt(generation) + permits > this.limit) return false
    // Claiming zeroes only generations older than the window, which usedAt did not count.
    this.claim(generation)
    const counts = this.counts
    const index = this.indexOf(generation)
    const sumAt = this.base + this.ring
    counts[index] = (counts[index] as number) + permits
    counts[sumAt] = (counts[sumAt] as number) + permits
    return true
  }

  availablePermits(): number {
    if (this.waiting) return 0
    const free = this.limit - this.usedAt(this.generationAt(this.clock.now()))
    return Math.max(free, 0)
  }

  retryAfterMs(permits = 1): number {
    if (!isPermitCount(permits)) throw invalidPermits('slidingWindow.retryAfterMs', permits)
    if (permits > this.limit) return Number.POSITIVE_INFINITY
    return this.delay(permits)
  }

  /**
   * What a store reports after a decision for `permits`, in one pass at one reading of
   * the clock: `availablePermits()`, `retryAfterMs(available + 1)` (0 when the window is
   * empty: nothing can free up) and, for a refusal, `retryAfterMs(permits)`.
   */
  quota(permits: number, allowed: boolean, out: Quota): void {
    const available = this.availablePermits()
    out.available = available
    out.resetMs = available < this.limit ? this.delay(available + 1) : 0
    out.retryAfterMs = allowed
      ? 0
      : permits > this.limit
        ? Number.POSITIVE_INFINITY
        : this.delay(permits)
  }

  delay(permits: number): number {
    const ms = this.clock.now()
    const generation = this.generationAt(ms)
    const used = this.usedAt(generation)
    let excess = used + permits - this.limit
    if (excess <= 0) return 0
    const counts = this.counts
    const oldest = generation - this.slots
    // Everything counted sits in the newest slot (a busy key, or one that comes back now
    // and then): the walk below would find it there, after only empty slots.
    if (this.head >= oldest && counts[this.indexOf(this.head)] === used) {
      return this.untilGeneration(ms, (used >= excess ? this.head : generation) + this.slots + 1)
    }
    // Oldest first: find the generation whose expiry frees enough permits. Only the ring
    // holds counts (generations after `head` have none), so walk it from the oldest one
    // still in the window up to `head`.
    const end = this.base + this.ring
    let i = this.indexOf(oldest)
    for (let g = oldest; g <= this.head; g++) {
      excess -= counts[i] as number
      if (excess <= 0) return this.untilGeneration(ms, g + this.slots + 1)
      if (++i === end) i = this.base
    }
    return this.untilGeneration(ms, generation + this.slots + 1)
  }

  private untilGeneration(ms: number, target: number): number {
    let delay = (target * this.windowMs) / this.slots - ms
    for (
      let attempt = 0;
      attempt < 64 && Math.floor(((ms + delay) * this.slots) / this.windowMs) < target;
      attempt++
    ) {
      delay = nudge(ms, delay, attempt)
    }
    return delay
  }

  resetMs(): number {
    const ms = this.clock.now()
    const generation = this.generationAt(ms)
    for (let g = generation; g >= generation - this.slots; g--) {
      if (this.countOf(g) > 0) return this.untilGeneration(ms, g + this.slots + 1)
    }
    return 0
  }

  receipt(): number {
    return this.head
  }

  /** Takes `back` permits off the count at `index` and off the ring's sum. */
  private uncount(index: number, back: number): void {
    const counts = this.counts
    const sumAt = this.base + this.ring
    counts[index] = (counts[index] as number) - back
    counts[sumAt] = (counts[sumAt] as number) - back
  }

  /** `[head, ...counts]`: the newest slot's number and the ring of slot counts. */
  exportState(): number[] {
    const state = [this.head]
    for (let i = 0; i < this.ring; i++) state.push(this.counts[this.base + i] as number)
    return state
  }

  importState(state: readonly number[]): void {
    this.head = state[0] ?? Number.NEGATIVE_INFINITY
    let sum = 0
    for (let i = 0; i < this.ring; i++) {
      const count = state[i + 1] ?? 0
      this.counts[this.base + i] = count
      sum += count
    }
    this.counts[this.base + this.ring] = sum
  }

  refund(permits = 1, receipt?: number): void {
    if (!isPermitCount(permits)) throw invalidPermits('slidingWindow.refund', permits)
    const generation = this.generationAt(this.clock.now())
    if (receipt !== undefined) {
      // Only the slot the permits were taken in, and only while it still counts: once
      // it has left the window its permits are free anyway.
      const count = this.countOf(receipt)
      if (receipt < generation - this.slots || count === 0) return
      this.uncount(this.indexOf(receipt), Math.min(count, permits))
      if (this.waiting) this.queue!.drain()
      return
    }
    let left = permits
    // Newest first: the permits most likely to be the ones being handed back.
    for (let g = generation; g >= generation - this.slots && left > 0; g--) {
      const count = this.countOf(g)
      if (count === 0) continue
      const back = Math.min(count, left)
      this.uncount(this.indexOf(g), back)
      left -= back
    }
    if (this.waiting) this.queue!.drain()
  }

  acquire(permits = 1, options?: WaitOptions): Promise<void> {
    this.queue ??= new WaitQueue(this, this.clock)
    return this.queue.acquire('slidingWindow.acquire', permits, options, this.limit)
  }
}

/** The sliding window's entry in the algorithm registry. */
export const slidingWindowAlgorithm: AlgorithmDefinition<SlidingWindowSpec> = {
  algorithm: 'sliding-window',
  factory: 'slidingWindow',
  timed: true,
  options: ['limit', 'window', 'slots'],
  normalize(options, label, prefix = '') {
    return {
      algorithm: 'sliding-window',
      limit: readPositiveInteger(label, `${prefix}limit`, options.limit),
      window: readPositiveDuration(label, `${prefix}window`, options.window, '1s'),
      slots:
        options.slots === undefined
          ? 10
          : readInteger(
              label,
              `${prefix}slots`,
              options.slots,
              1,
              `an integer from 1 to ${MAX_SLOTS}`,
              MAX_SLOTS,
            ),
    }
  },
  create(spec, name, clock) {
    return new SlidingWindowLimiter(name, clock, spec.limit, spec.window, spec.slots)
  },
}

/**
 * A sliding window: at most `limit` permits in any rolling `window` (default `'1s'`),
 * to a precision of one slot (`window / slots`, default 10 slots): a permit counts until
 * its slot has wholly left the window, so it may be held up to one slot longer than a
 * perfect log would. No boundary double burst, and memory is `slots + 1` counters
 * regardless of traffic.
 *
 * `acquire` waits in a FIFO queue; while anyone waits, `tryAcquire` refuses and
 * `availablePermits()` reports 0, so waiters are never starved.
 *
 * @example
 * ```ts
 * const perMinute = slidingWindow({ limit: 100, window: '1m', slots: 12 })
 * if (!perMinute.tryAcquire()) console.log(`retry in ${perMinute.retryAfterMs()} ms`)
 * ```
 */
export function slidingWindow(options: SlidingWindowOptions): RateLimiter {
  return buildLimiter(slidingWindowAlgorithm, options) as RateLimiter
}
