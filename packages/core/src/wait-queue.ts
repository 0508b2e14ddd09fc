import { neverError, RateLimitError } from './errors'
import { invalidPermits, isPermitCount, readWaitOptions } from './options'
import type { Clock, WaitOptions } from './types'

/** What a limiter lends its {@link WaitQueue}. */
export interface Waitable {
  readonly name: string
  /** Takes `permits` if there is room now, ignoring queued waiters. */
  take(permits: number): boolean
  /** Milliseconds until `take(permits)` would pass with no further traffic. */
  delay(permits: number): number
}

interface Waiter {
  readonly permits: number
  readonly deadline: number
  readonly resolve: () => void
  readonly reject: (reason: unknown) => void
  readonly signal: AbortSignal | undefined
  readonly onAbort: () => void
  readonly timer: AbortController | undefined
}

const ignore = (): void => {}

/**
 * The FIFO queue of callers waiting for permits of a window limiter (GCRA limiters reserve
 * future permits instead; concurrency limiters have their own queue, by priority, in
 * `priority/slot-queue.ts`). Only the head is served, and the owner's `tryAcquire` refuses
 * while anyone waits, so a steady stream of `tryAcquire` callers cannot starve a waiter.
 * One clock sleep at a time wakes the queue when the head's permits free up. Each waiter
 * with a timeout has its own sleep, cancelled when it settles.
 */
export class WaitQueue {
  private readonly waiters = new Set<Waiter>()
  private wake: AbortController | undefined
  private wakeAt = Number.POSITIVE_INFINITY

  constructor(
    private readonly owner: Waitable,
    private readonly clock: Clock,
  ) {}

  /** Callers currently waiting. */
  get size(): number {
    return this.waiters.size
  }

  /**
   * A rate limiter's `acquire`: validates its arguments (errors name `method`), then
   * waits. Async, so bad arguments reject rather than throw, as `acquire` promises.
   */
  async acquire(
    method: string,
    permits: number,
    options: WaitOptions | undefined,
    capacity: number,
  ): Promise<void> {
    if (!isPermitCount(permits)) throw invalidPermits(method, permits)
    const { timeoutMs, signal } = readWaitOptions(method, options)
    signal?.throwIfAborted()
    if (permits > capacity) throw neverError(this.owner.name, permits, capacity)
    return this.wait(permits, timeoutMs, signal)
  }

  /** Waits for `permits` (already validated, ≤ the capacity) up to `timeoutMs`. */
  wait(permits: number, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.waiters.size === 0 && this.owner.take(permits)) return Promise.resolve()
    // Even with nobody ahead the permits are this far away: fail fast, don't sleep.
    const delay = this.owner.delay(permits)
    if (delay > timeoutMs) return Promise.reject(this.timeoutError(permits, timeoutMs, delay))
    return new Promise<void>((resolve, reject) => {
      const timer = timeoutMs === Number.POSITIVE_INFINITY ? undefined : new AbortController()
      const waiter: Waiter = {
        permits,
        deadline: this.clock.now() + timeoutMs,
        resolve,
        reject,
        signal,
        timer,
        onAbort: () => this.abort(waiter),
      }
      signal?.addEventListener('abort', waiter.onAbort, { once: true })
      this.waiters.add(waiter)
      if (timer !== undefined) {
        this.clock.sleep(timeoutMs, timer.signal).then(() => this.expire(waiter, timeoutMs), ignore)
      }
      this.drain()
    })
  }

  /** Serves the queue head while it fits; otherwise sleeps until it could. */
  drain(): void {
    for (let head = this.head(); head !== undefined; head = this.head()) {
      if (this.owner.take(head.permits)) {
        this.settle(head)
        head.resolve()
        continue
      }
      const delay = this.owner.delay(head.permits)
      if (this.clock.now() + delay > head.deadline) {
        this.settle(head)
        head.reject(this.timeoutError(head.permits, undefined, delay))
        continue
      }
      this.scheduleWake(delay)
      return
    }
    this.wake?.abort()
    this.wake = undefined
  }

  /**
   * After the owner's limit changed: rejects the waiters asking more than `capacity` (they
   * could never be served), as `acquire` would have, and serves the rest in order.
   */
  refuseAbove(capacity: number): void {
    for (const waiter of this.waiters) {
      if (waiter.permits <= capacity) continue
      this.settle(waiter)
      waiter.reject(neverError(this.owner.name, waiter.permits, capacity))
    }
    this.drain()
  }

  private head(): Waiter | undefined {
    for (const waiter of this.waiters) return waiter
    return undefined
  }

  private scheduleWake(delay: number): void {
    const at = this.clock.now() + delay
    if (this.wake !== undefined) {
      if (this.wakeAt <= at) return
      this.wake.abort()
    }
    const wake = new AbortController()
    this.wake = wake
    this.wakeAt = at
    this.clock.sleep(delay, wake.signal).then(() => {
      if (this.wake !== wake) return
      this.wake = undefined
      this.drain()
    }, ignore)
  }

  private settle(waiter: Waiter): void {
    this.waiters.delete(waiter)
    waiter.signal?.removeEventListener('abort', waiter.onAbort)
    waiter.timer?.abort()
  }

  private abort(waiter: Waiter): void {
    if (!this.waiters.has(waiter)) return
    const wasHead = this.head() === waiter
    this.settle(waiter)
    waiter.reject(waiter.signal?.reason)
    // A large request at the head may have been holding back smaller ones behind it.
    if (wasHead) this.drain()
  }

  private expire(waiter: Waiter, timeoutMs: number): void {
    // Serve first: permits that free up exactly at the deadline still count.
    this.drain()
    if (!this.waiters.has(waiter)) return
    const wasHead = this.head() === waiter
    this.settle(waiter)
    waiter.reject(this.timeoutError(waiter.permits, timeoutMs, this.owner.delay(waiter.permits)))
    if (wasHead) this.drain()
  }

  private timeoutError(
    permits: number,
    timeoutMs: number | undefined,
    delay: number,
  ): RateLimitError {
    const within = timeoutMs === undefined ? 'before the timeout' : `within ${timeoutMs} ms`
    return new RateLimitError('ERR_SLUICE_TIMEOUT', {
      limiter: this.owner.name,
      retryAfterMs: delay,
      message: `${this.owner.name}: ${permits} permit(s) not available ${within}`,
    })
  }
}
