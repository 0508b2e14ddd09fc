import { RateLimitError } from './errors'
import {
  invalidPermits,
  isPermitCount,
  readClock,
  readInteger,
  readName,
  readPositiveInteger,
  readWaitOptions,
  requireOptions,
} from './options'
import type { Clock, ConcurrencyLimiter, ConcurrencyOptions, Permit, WaitOptions } from './types'

interface Waiter {
  readonly permits: number
  readonly resolve: (permit: Permit) => void
  readonly reject: (reason: unknown) => void
  readonly signal: AbortSignal | undefined
  readonly onAbort: () => void
  readonly timer: AbortController | undefined
}

const ignore = (): void => {}

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

class BulkheadLimiter implements ConcurrencyLimiter {
  readonly name: string
  readonly max: number
  readonly maxQueue: number
  private readonly clock: Clock
  private held = 0
  private readonly waiters = new Set<Waiter>()

  constructor(name: string, clock: Clock, max: number, maxQueue: number) {
    this.name = name
    this.clock = clock
    this.max = max
    this.maxQueue = maxQueue
  }

  get inFlight(): number {
    return this.held
  }

  get queued(): number {
    return this.waiters.size
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits('concurrency.tryAcquire', permits)
    }
    // Released permits go to the queue head first; no barging past waiters.
    if (this.waiters.size !== 0 || this.held + permits > this.max) return false
    this.held += permits
    return true
  }

  availablePermits(): number {
    return this.max - this.held
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
    if (this.waiters.size !== 0) this.drain()
  }

  tryEnter(permits = 1): Permit | undefined {
    if (!isPermitCount(permits)) throw invalidPermits('concurrency.tryEnter', permits)
    return this.tryAcquire(permits) ? new HeldPermit(this, permits) : undefined
  }

  enter(options?: WaitOptions & { permits?: number }): Promise<Permit> {
    try {
      return this.startEnter(options)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  private startEnter(options: (WaitOptions & { permits?: number }) | undefined): Promise<Permit> {
    const method = 'concurrency.enter'
    const { timeoutMs, signal } = readWaitOptions(method, options)
    const permits = options?.permits ?? 1
    if (!isPermitCount(permits)) throw invalidPermits(method, permits)
    signal?.throwIfAborted()
    if (permits > this.max) {
      throw new RateLimitError('ERR_SLUICE_LIMITED', {
        limiter: this.name,
        retryAfterMs: Number.POSITIVE_INFINITY,
        message: `${this.name}: ${permits} permits can never be granted, the limiter holds at most ${this.max}`,
      })
    }
    if (this.tryAcquire(permits)) return Promise.resolve(new HeldPermit(this, permits))
    if (this.waiters.size >= this.maxQueue) {
      throw new RateLimitError('ERR_SLUICE_QUEUE_FULL', {
        limiter: this.name,
        message: `${this.name}: ${this.max} in flight and the wait queue is full (maxQueue ${this.maxQueue})`,
      })
    }
    // Without a time axis the only timeout known to be hopeless is zero.
    if (timeoutMs === 0) throw this.timeoutError(permits, timeoutMs)
    return new Promise<Permit>((resolve, reject) => {
      const timer = timeoutMs === Number.POSITIVE_INFINITY ? undefined : new AbortController()
      const waiter: Waiter = {
        permits,
        resolve,
        reject,
        signal,
        timer,
        onAbort: () => this.leave(waiter, signal?.reason),
      }
      signal?.addEventListener('abort', waiter.onAbort, { once: true })
      this.waiters.add(waiter)
      if (timer !== undefined) {
        this.clock
          .sleep(timeoutMs, timer.signal)
          .then(() => this.leave(waiter, this.timeoutError(permits, timeoutMs)), ignore)
      }
    })
  }

  /** Hands freed permits to waiters in FIFO order, stopping at the first that does not fit. */
  private drain(): void {
    for (const waiter of this.waiters) {
      if (this.held + waiter.permits > this.max) return
      this.held += waiter.permits
      this.settle(waiter)
      waiter.resolve(new HeldPermit(this, waiter.permits))
    }
  }

  private leave(waiter: Waiter, reason: unknown): void {
    if (!this.waiters.has(waiter)) return
    let wasHead = false
    for (const head of this.waiters) {
      wasHead = head === waiter
      break
    }
    this.settle(waiter)
    waiter.reject(reason)
    // A large request at the head may have been holding back smaller ones behind it.
    if (wasHead) this.drain()
  }

  private settle(waiter: Waiter): void {
    this.waiters.delete(waiter)
    waiter.signal?.removeEventListener('abort', waiter.onAbort)
    waiter.timer?.abort()
  }

  private timeoutError(permits: number, timeoutMs: number): RateLimitError {
    return new RateLimitError('ERR_SLUICE_TIMEOUT', {
      limiter: this.name,
      message: `${this.name}: ${permits} permit(s) not free within ${timeoutMs} ms`,
    })
  }
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
  const factory = 'concurrency'
  requireOptions(factory, options)
  const max = readPositiveInteger(factory, 'max', options.max)
  const { maxQueue } = options
  const queue =
    maxQueue === undefined
      ? 0
      : maxQueue === Number.POSITIVE_INFINITY
        ? maxQueue
        : readInteger(factory, 'maxQueue', maxQueue, 0, 'a non-negative integer or Infinity')
  return new BulkheadLimiter(
    readName(factory, options, 'concurrency'),
    readClock(factory, options),
    max,
    queue,
  )
}
