import { type AlgorithmDefinition, buildLimiter } from '../algorithm'
import type { ReconfigureOptions } from '../carry'
import { neverError, RateLimitError } from '../errors'
import { invalidPermits, isPermitCount, readWaitOptions } from '../options'
import { readReconfigure } from '../reconfigure'
import type {
  Clock,
  ConcurrencyLimiter,
  ConcurrencyOptions,
  LimiterSpec,
  NormalizedSpec,
  Permit,
  ReconfigureSpec,
  WaitOptions,
} from '../types'
import { readInteger, readPositiveInteger } from '../validation'
import { type Waitable, WaitQueue } from '../wait-queue'

type ConcurrencySpec = Extract<NormalizedSpec, { algorithm: 'concurrency' }>

class HeldPermit implements Permit {
  readonly permits: number
  #limiter: BulkheadLimiter | undefined

  constructor(limiter: BulkheadLimiter, permits: number) {
    this.#limiter = limiter
    this.permits = permits
  }

  release(): void {
    const limiter = this.#limiter
    if (limiter === undefined) {
      throw new Error(`concurrency: this permit (${this.permits}) was already released`)
    }
    this.#limiter = undefined
    limiter.release(this.permits)
  }

  // After an explicit release this is a no-op, so `using` plus an early release is safe.
  [Symbol.dispose](): void {
    if (this.#limiter !== undefined) this.release()
  }
}

class BulkheadLimiter implements ConcurrencyLimiter, Waitable {
  readonly name: string
  #max: number
  #maxQueue: number
  private held = 0
  private readonly queue: WaitQueue
  readonly #clock: Clock

  constructor(name: string, clock: Clock, max: number, maxQueue: number) {
    this.name = name
    this.#max = max
    this.#maxQueue = maxQueue
    this.#clock = clock
    this.queue = new WaitQueue(this, clock)
  }

  get max(): number {
    return this.#max
  }

  get maxQueue(): number {
    return this.#maxQueue
  }

  reconfigure(
    spec: ReconfigureSpec<Extract<LimiterSpec, { algorithm: 'concurrency' }>>,
    options?: ReconfigureOptions,
  ): void {
    const next = readReconfigure(concurrencyAlgorithm, this.name, this.#clock, spec, options)
    this.#max = next.spec.max
    this.#maxQueue = next.spec.maxQueue
    this.queue.refuseAbove(this.#max)
  }

  get inFlight(): number {
    return this.held
  }

  get queued(): number {
    return this.queue.size
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits('concurrency.tryAcquire', permits)
    }
    // Released permits go to the queue head first; no barging past waiters.
    return this.queue.size === 0 && this.take(permits)
  }

  take(permits: number): boolean {
    if (this.held + permits > this.#max) return false
    this.held += permits
    return true
  }

  /** Time frees nothing here: only a release does, and it drains the queue. */
  delay(): undefined {
    return undefined
  }

  availablePermits(): number {
    // Below zero once `max` was lowered under the permits still held.
    return Math.max(0, this.#max - this.held)
  }

  release(permits = 1): void {
    if (!isPermitCount(permits)) throw invalidPermits('concurrency.release', permits)
    // Over-release is a bug (a double release) that would silently raise the limit.
    if (permits > this.held) {
      throw new RangeError(
        `concurrency.release: cannot release ${permits} permit(s), only ${this.held} held`,
      )
    }
    this.held -= permits
    if (this.queue.size !== 0) this.queue.drain()
  }

  tryEnter(permits = 1): Permit | undefined {
    if (!isPermitCount(permits)) throw invalidPermits('concurrency.tryEnter', permits)
    return this.tryAcquire(permits) ? new HeldPermit(this, permits) : undefined
  }

  async enter(options?: WaitOptions & { permits?: number }): Promise<Permit> {
    const method = 'concurrency.enter'
    const { timeoutMs, signal } = readWaitOptions(method, options, ['permits'])
    const permits = options?.permits ?? 1
    if (!isPermitCount(permits)) throw invalidPermits(method, permits)
    signal?.throwIfAborted()
    if (permits > this.max) throw neverError(this.name, permits, this.max)
    if (this.tryAcquire(permits)) return new HeldPermit(this, permits)
    if (this.queue.size >= this.maxQueue) {
      throw new RateLimitError('ERR_SLUICE_QUEUE_FULL', {
        limiter: this.name,
        message: `${this.name}: ${this.max} in flight and the wait queue is full (maxQueue ${this.maxQueue})`,
      })
    }
    await this.queue.wait(permits, timeoutMs, signal)
    return new HeldPermit(this, permits)
  }
}

/** The concurrency limiter's entry in the algorithm registry. */
export const concurrencyAlgorithm: AlgorithmDefinition<ConcurrencySpec> = {
  algorithm: 'concurrency',
  factory: 'concurrency',
  timed: false,
  options: ['max', 'maxQueue'],
  normalize(options, label, prefix = '') {
    const { maxQueue } = options
    return {
      algorithm: 'concurrency',
      max: readPositiveInteger(label, `${prefix}max`, options.max),
      maxQueue:
        maxQueue === undefined
          ? 0
          : maxQueue === Number.POSITIVE_INFINITY
            ? maxQueue
            : readInteger(
                label,
                `${prefix}maxQueue`,
                maxQueue,
                0,
                'a non-negative integer or Infinity',
              ),
    }
  },
  create(spec, name, clock) {
    return new BulkheadLimiter(name, clock, spec.max, spec.maxQueue)
  },
}

/**
 * A bulkhead: at most `max` permits in flight at once, no time axis. Permits come back
 * only through `release` (or a `Permit`'s `release`/dispose), never with time; releasing
 * more than is held throws. `enter` waits in a FIFO queue of at most `maxQueue`
 * (default 0: no waiting). It complements a rate limiter, it does not replace one:
 * 10 calls a second that each take 3 s still means 30 in flight.
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
 * ```
 */
export function concurrency(options: ConcurrencyOptions): ConcurrencyLimiter {
  return buildLimiter(concurrencyAlgorithm, options) as ConcurrencyLimiter
}
