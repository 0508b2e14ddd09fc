import type { AlgorithmDefinition } from '../algorithm'
import { neverError, RateLimitError } from '../errors'
import {
  invalidPermits,
  isPermitCount,
  readEnterOptions,
  readEnterWaitOptions,
  readMaxQueue,
} from '../options'
import {
  DEFAULT_PRIORITY,
  PRIORITY_OPTIONS,
  type QueueSettings,
  readQueueReconfigure,
  readQueueSettings,
} from '../priority/priority'
import { SlotQueue } from '../priority/slot-queue'
import { readReconfigure } from '../reconfigure'
import type {
  Clock,
  ConcurrencyLimiter,
  ConcurrencyOptions,
  EnterOptions,
  LimiterSpec,
  NormalizedSpec,
  Permit,
  PriorityOptions,
  ReconfigureOptions,
  ReconfigureSpec,
  WaitOptions,
} from '../types'
import { readClock, readName, readOptions, readPositiveInteger } from '../validation'

type ConcurrencySpec = Extract<NormalizedSpec, { algorithm: 'concurrency' }>

class HeldPermit implements Permit {
  readonly permits: number
  readonly priority: number
  #limiter: BulkheadLimiter | undefined

  constructor(limiter: BulkheadLimiter, permits: number, priority: number) {
    this.#limiter = limiter
    this.permits = permits
    this.priority = priority
  }

  release(): void {
    const limiter = this.#limiter
    if (limiter === undefined) {
      throw new Error(`concurrency: this permit (${this.permits}) was already released`)
    }
    this.#limiter = undefined
    limiter.give(this.permits, this.priority)
  }

  // After an explicit release this is a no-op, so `using` plus an early release is safe.
  [Symbol.dispose](): void {
    if (this.#limiter !== undefined) this.release()
  }
}

class BulkheadLimiter implements ConcurrencyLimiter {
  readonly name: string
  #max: number
  #queue: QueueSettings
  readonly #clock: Clock
  private readonly slots: SlotQueue

  constructor(name: string, clock: Clock, max: number, settings: QueueSettings) {
    this.name = name
    this.#max = max
    this.#queue = settings
    this.#clock = clock
    this.slots = new SlotQueue(name, () => this.#max, clock, settings)
  }

  get max(): number {
    return this.#max
  }

  get maxQueue(): number {
    return this.#queue.maxQueue
  }

  /** Priorities (`partitions`, `queuePolicy`, …) stay as built: given again, unchanged. */
  reconfigure(
    spec: ReconfigureSpec<Extract<LimiterSpec, { algorithm: 'concurrency' }>> & PriorityOptions,
    options?: ReconfigureOptions,
  ): void {
    const method = 'concurrency.reconfigure'
    const next = readReconfigure(concurrencyAlgorithm, this.name, this.#clock, spec, options, [
      ...PRIORITY_OPTIONS,
    ])
    const queue = readQueueReconfigure(
      method,
      spec as PriorityOptions,
      this.#queue,
      next.spec.maxQueue,
    )
    this.#max = next.spec.max
    this.#queue = queue
    this.slots.reconfigure(queue, this.#max)
  }

  get inFlight(): number {
    return this.slots.inFlight
  }

  get queued(): number {
    return this.slots.queued
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits('concurrency.tryAcquire', permits)
    }
    return this.slots.tryTake(permits, DEFAULT_PRIORITY)
  }

  availablePermits(): number {
    // Below zero once `max` was lowered under the permits still held.
    return Math.max(0, this.#max - this.slots.inFlight)
  }

  release(permits = 1): void {
    if (!isPermitCount(permits)) throw invalidPermits('concurrency.release', permits)
    this.#checkHeld(permits, this.slots.inFlight)
    this.slots.releaseAny(permits)
  }

  /** A permit's release: its permits go back to its own priority. */
  give(permits: number, priority: number): void {
    this.#checkHeld(permits, this.slots.inFlightOf(priority))
    this.slots.release(permits, priority)
  }

  // Over-release is a bug (a double release) that would silently raise the limit.
  #checkHeld(permits: number, held: number): void {
    if (permits > held) {
      throw new RangeError(
        `concurrency.release: cannot release ${permits} permit(s), only ${held} held`,
      )
    }
  }

  tryEnter(options?: number | EnterOptions): Permit | undefined {
    const { permits, priority } = readEnterOptions('concurrency.tryEnter', options)
    return this.slots.tryTake(permits, priority)
      ? new HeldPermit(this, permits, priority)
      : undefined
  }

  async enter(options?: WaitOptions & EnterOptions): Promise<Permit> {
    const method = 'concurrency.enter'
    const { timeoutMs, signal, permits, priority } = readEnterWaitOptions(method, options)
    signal?.throwIfAborted()
    if (permits > this.max) throw neverError(this.name, permits, this.max)
    if (this.slots.tryTake(permits, priority)) return new HeldPermit(this, permits, priority)
    const joined = this.slots.join(permits, priority, timeoutMs, signal)
    if (joined instanceof RateLimitError) throw joined
    await joined
    return new HeldPermit(this, permits, priority)
  }
}

/** The concurrency limiter's entry in the algorithm registry. */
export const concurrencyAlgorithm: AlgorithmDefinition<ConcurrencySpec> = {
  algorithm: 'concurrency',
  factory: 'concurrency',
  timed: false,
  options: ['max', 'maxQueue'],
  normalize(options, label, prefix = '') {
    return {
      algorithm: 'concurrency',
      max: readPositiveInteger(label, `${prefix}max`, options.max),
      maxQueue: readMaxQueue(label, `${prefix}maxQueue`, options.maxQueue),
    }
  },
  create(spec, name, clock) {
    return new BulkheadLimiter(name, clock, spec.max, readQueueSettings(name, {}, spec.maxQueue))
  },
  defaultName: (spec) => `${spec.max}-concurrent`,
}

/**
 * A bulkhead: at most `max` permits in flight at once, no time axis. Permits come back
 * only through `release` (or a `Permit`'s `release`/dispose), never with time; releasing
 * more than is held throws. `enter` waits in a FIFO queue of at most `maxQueue`
 * (default 0: no waiting). It complements a rate limiter, it does not replace one:
 * 10 calls a second that each take 3 s still means 30 in flight.
 *
 * Priorities: `tryEnter({ priority })` and `enter({ priority })` take `'critical'`,
 * `'default'` (the default), `'sheddable'` or any number, and under overload the lowest is
 * refused first: waiters are served by priority, a full queue refuses its lowest waiter to
 * make room for a higher newcomer, and a request may wait (even with `maxQueue` 0) for the
 * permit of lower-priority work in flight. `partitions` guarantee shares of `max` by
 * priority: an unused share is lent, and the next permit released goes back to its owner.
 * `queuePolicy` (`'fifo'`, `'codel'`, `'adaptive-lifo'`) says how the queue sheds once
 * waiting stops helping. A refusal's `RateLimitError` names its `partition`.
 *
 * @example
 * ```ts
 * const exportSlots = concurrency({ max: 4, maxQueue: 100 })
 * {
 *   using permit = exportSlots.tryEnter()
 *   if (permit) await runExport() // released when the block exits, even on throw
 * }
 * const permit = await exportSlots.enter({ timeout: '5s' })
 * try { await runExport() } finally { permit.release() }
 *
 * const db = concurrency({ max: 20, maxQueue: 50, partitions: { critical: 0.5 }, queuePolicy: 'codel' })
 * const slot = await db.enter({ priority: user.paid ? 'critical' : 'sheddable', timeout: '1s' })
 * ```
 */
export function concurrency(options: ConcurrencyOptions): ConcurrencyLimiter {
  const factory = 'concurrency'
  // Priorities decide admission in this process only: they are no part of the spec a
  // store shares, so they are read here rather than by the registry entry.
  readOptions(factory, options, [
    ...concurrencyAlgorithm.options,
    ...PRIORITY_OPTIONS,
    'name',
    'clock',
  ])
  const spec = concurrencyAlgorithm.normalize(
    options as unknown as Readonly<Record<string, unknown>>,
    factory,
  )
  return new BulkheadLimiter(
    readName(factory, 'name', options.name, 'concurrency'),
    readClock(factory, 'clock', options.clock),
    spec.max,
    readQueueSettings(factory, options, spec.maxQueue),
  )
}
