import { type AlgorithmDefinition, buildLimiter } from './algorithm'
import { invalidPermits, isPermitCount, nudge } from './options'
import type {
  Clock,
  NormalizedSpec,
  PortableRateLimiter,
  RateLimiter,
  SlidingWindowOptions,
  WaitOptions,
} from './types'
import { readInteger, readPositiveDuration, readPositiveInteger } from './validation'
import { type Waitable, WaitQueue } from './wait-queue'

type SlidingWindowSpec = Extract<NormalizedSpec, { algorithm: 'sliding-window' }>

/** Most slots a window may be cut into: every key keeps `slots + 1` counters. */
const MAX_SLOTS = 10_000

class SlidingWindowLimiter implements PortableRateLimiter, Waitable {
  readonly name: string
  readonly limit: number
  readonly windowMs: number
  readonly slots: number
  private readonly clock: Clock
  // A ring of slots + 1 counts for consecutive generations (absolute slot numbers), the
  // newest being `head`. The rolling window (now − window, now] overlaps the current slot
  // and, partly, the `slots` before it; older generations are ignored, and moving `head`
  // forward zeroes the buckets it claims. Memory is fixed, whatever the traffic: a plain
  // array of small integers and one number, so a store can keep many keys.
  private readonly counts: number[]
  private head = Number.NEGATIVE_INFINITY
  // Made on the first `acquire`: most limiters (one per client key in a store) never wait.
  private queue: WaitQueue | undefined
  // The sum of the rolling window as of `cachedGeneration`: it only changes when a slot
  // boundary passes or permits are taken or refunded, so a burst of decisions within one
  // slot sums the ring once instead of on every call.
  private cachedGeneration = Number.NaN
  private cachedUsed = 0

  constructor(name: string, clock: Clock, limit: number, windowMs: number, slots: number) {
    this.name = name
    this.clock = clock
    this.limit = limit
    this.windowMs = windowMs
    this.slots = slots
    this.counts = new Array<number>(slots + 1).fill(0)
  }

  // Multiplying before dividing keeps slot boundaries exact for integral windows.
  private generationAt(ms: number): number {
    return Math.floor((ms * this.slots) / this.windowMs)
  }

  private indexOf(generation: number): number {
    const ring = this.counts.length
    return ((generation % ring) + ring) % ring
  }

  /** The count of `generation`, or 0 when the ring no longer (or not yet) holds it. */
  private countOf(generation: number): number {
    if (generation > this.head || generation <= this.head - this.counts.length) return 0
    return this.counts[this.indexOf(generation)] as number
  }

  private usedAt(generation: number): number {
    if (generation === this.cachedGeneration) return this.cachedUsed
    const newest = Math.min(generation, this.head)
    let used = 0
    for (
      let g = Math.max(generation - this.slots, this.head - this.counts.length + 1);
      g <= newest;
      g++
    ) {
      used += this.counts[this.indexOf(g)] as number
    }
    this.cachedGeneration = generation
    this.cachedUsed = used
    return used
  }

  /** Moves `head` forward to `generation`, zeroing the buckets of the generations it claims. */
  private claim(generation: number): void {
    if (generation <= this.head) return
    const first = Math.max(this.head + 1, generation - this.counts.length + 1)
    for (let g = first; g <= generation; g++) this.counts[this.indexOf(g)] = 0
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
    // Claiming zeroes only generations older than the window, which usedAt did not count,
    // so the cached sum stays right once the permits are added to it.
    this.claim(generation)
    const index = this.indexOf(generation)
    this.counts[index] = (this.counts[index] as number) + permits
    this.cachedUsed += permits
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

  delay(permits: number): number {
    const ms = this.clock.now()
    const generation = this.generationAt(ms)
    let excess = this.usedAt(generation) + permits - this.limit
    if (excess <= 0) return 0
    // Oldest first: find the generation whose expiry frees enough permits.
    for (let g = generation - this.slots; g <= generation; g++) {
      excess -= this.countOf(g)
      if (excess <= 0) return this.untilGeneration(ms, g + this.slots + 1)
    }
    return this.untilGeneration(ms, generation + this.slots + 1)
  }

  private untilGeneration(ms: number, target: number): number {
    let delay = (target * this.windowMs) / this.slots - ms
    for (let attempt = 0; attempt < 64 && this.generationAt(ms + delay) < target; attempt++) {
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

  /** `[head, ...counts]`: the newest slot's number and the ring of slot counts. */
  exportState(): number[] {
    return [this.head, ...this.counts]
  }

  importState(state: readonly number[]): void {
    this.head = state[0] ?? Number.NEGATIVE_INFINITY
    for (let i = 0; i < this.counts.length; i++) this.counts[i] = state[i + 1] ?? 0
    this.cachedGeneration = Number.NaN
  }

  refund(permits = 1, receipt?: number): void {
    if (!isPermitCount(permits)) throw invalidPermits('slidingWindow.refund', permits)
    const generation = this.generationAt(this.clock.now())
    if (receipt !== undefined) {
      // Only the slot the permits were taken in, and only while it still counts: once
      // it has left the window its permits are free anyway.
      const count = this.countOf(receipt)
      if (receipt < generation - this.slots || count === 0) return
      this.counts[this.indexOf(receipt)] = count - Math.min(count, permits)
      this.cachedGeneration = Number.NaN
      if (this.waiting) this.queue!.drain()
      return
    }
    let left = permits
    // Newest first: the permits most likely to be the ones being handed back.
    for (let g = generation; g >= generation - this.slots && left > 0; g--) {
      const count = this.countOf(g)
      if (count === 0) continue
      const back = Math.min(count, left)
      this.counts[this.indexOf(g)] = count - back
      left -= back
    }
    this.cachedGeneration = Number.NaN
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
