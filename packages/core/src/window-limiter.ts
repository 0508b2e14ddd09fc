import type { AlgorithmDefinition } from './algorithm'
import type { RateKernel } from './kernel'
import { invalidPermits, isPermitCount } from './options'
import { reconfigureKernel } from './reconfigure'
import type {
  Clock,
  NormalizedSpec,
  RateLimiter,
  RateLimiterSpec,
  ReconfigureOptions,
  ReconfigureSpec,
  WaitOptions,
} from './types'
import { type Waitable, WaitQueue } from './wait-queue'

type WindowSpec = Extract<NormalizedSpec, { algorithm: 'sliding-window' | 'fixed-window' }>

/**
 * A sliding or fixed window: its kernel on one row, read at the clock's time. `acquire`
 * waits in a FIFO queue (made on the first `acquire`: most limiters never wait); while
 * anyone waits, `tryAcquire` refuses and `availablePermits()` reports 0, so waiters are
 * never starved by a stream of `tryAcquire` callers.
 */
export class WindowLimiter implements RateLimiter, Waitable {
  readonly name: string
  readonly #definition: AlgorithmDefinition<WindowSpec>
  readonly #factory: string
  readonly #clock: Clock
  #kernel: RateKernel
  #queue: WaitQueue | undefined

  constructor(
    definition: AlgorithmDefinition<WindowSpec>,
    name: string,
    clock: Clock,
    kernel: RateKernel,
  ) {
    this.#definition = definition
    this.#factory = definition.factory
    this.name = name
    this.#clock = clock
    this.#kernel = kernel
    kernel.resize(1)
    kernel.clear(0, clock.now())
  }

  get limit(): number {
    return this.#kernel.spec.limit
  }

  get windowMs(): number {
    return this.#kernel.spec.window
  }

  /** The queue is served again, in order, under the new limit. */
  reconfigure(spec: ReconfigureSpec<RateLimiterSpec>, options?: ReconfigureOptions): void {
    const next = reconfigureKernel(
      this.#definition,
      this.name,
      this.#clock,
      this.#kernel,
      spec,
      options,
    )
    this.#kernel = next.kernel
    this.#queue?.refuseAbove(next.kernel.capacity)
  }

  get #waiting(): boolean {
    return this.#queue !== undefined && this.#queue.size !== 0
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits(`${this.#factory}.tryAcquire`, permits)
    }
    if (this.#waiting) return false
    return this.#kernel.take(0, this.#clock.now(), permits)
  }

  /** For the wait queue: takes `permits` if they fit now, queued waiters or not. */
  take(permits: number): boolean {
    return this.#kernel.take(0, this.#clock.now(), permits)
  }

  /** For the wait queue: milliseconds until `permits` fit with no further traffic. */
  delay(permits: number): number {
    return this.#kernel.wait(0, this.#clock.now(), permits)
  }

  availablePermits(): number {
    if (this.#waiting) return 0
    return this.#kernel.available(0, this.#clock.now())
  }

  retryAfterMs(permits = 1): number {
    if (!isPermitCount(permits)) throw invalidPermits(`${this.#factory}.retryAfterMs`, permits)
    return this.#kernel.wait(0, this.#clock.now(), permits)
  }

  resetMs(): number {
    return this.#kernel.untilFresh(0, this.#clock.now())
  }

  receipt(): number {
    return this.#kernel.receipt(0)
  }

  refund(permits = 1, receipt?: number): void {
    if (!isPermitCount(permits)) throw invalidPermits(`${this.#factory}.refund`, permits)
    this.#kernel.refund(0, this.#clock.now(), permits, receipt)
    if (this.#waiting) this.#queue!.drain()
  }

  acquire(permits = 1, options?: WaitOptions): Promise<void> {
    this.#queue ??= new WaitQueue(this, this.#clock)
    return this.#queue.acquire(`${this.#factory}.acquire`, permits, options, this.limit)
  }
}
