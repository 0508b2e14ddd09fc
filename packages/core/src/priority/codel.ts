/**
 * CoDel's test for a standing queue, for one priority's waiters, as folly's `Codel` applies
 * it to request queues rather than packets: if even the shortest queueing delay over a whole
 * `intervalMs` was above `targetMs`, waiting is no longer absorbing a burst but adding
 * latency to everything, and the queue is overloaded until an interval shows otherwise.
 * While overloaded, a request that has waited more than twice the target is dropped
 * (folly's "slough" rule, which Facebook found to work better for RPCs than CoDel's
 * ever-shorter drop intervals).
 *
 * Intervals start at the first observation and roll lazily, when the next one comes.
 *
 * @example
 * ```ts
 * const codel = new Codel(5, 100)
 * codel.sample(8, 0, undefined)
 * codel.sample(12, 40, undefined)
 * codel.observe(100, undefined) // the interval's shortest delay was 8 > 5: overloaded
 * codel.overloaded              // true
 * codel.expired(11)             // true: over twice the target
 * ```
 */
export class Codel {
  /** Whether the last full interval showed a standing queue. */
  overloaded = false
  readonly #targetMs: number
  readonly #intervalMs: number
  #intervalEnd = Number.NaN
  #minDelay = Number.POSITIVE_INFINITY
  #samples = 0

  constructor(targetMs: number, intervalMs: number) {
    this.#targetMs = targetMs
    this.#intervalMs = intervalMs
  }

  /**
   * Closes the interval if it has ended. `standingMs` is how long the oldest waiter has
   * waited so far (`undefined`: nobody waits): an interval in which nobody was let in at
   * all judges by it, since a queue that serves no one is standing if anyone is in it.
   */
  observe(now: number, standingMs: number | undefined): void {
    if (now < this.#intervalEnd) return
    if (!Number.isNaN(this.#intervalEnd)) {
      const shortest = this.#samples > 0 ? this.#minDelay : (standingMs ?? 0)
      this.overloaded = shortest > this.#targetMs
    }
    this.#intervalEnd = now + this.#intervalMs
    this.#minDelay = Number.POSITIVE_INFINITY
    this.#samples = 0
  }

  /** Records the queueing delay of a request let in (0 for one that did not wait). */
  sample(delayMs: number, now: number, standingMs: number | undefined): void {
    this.observe(now, standingMs)
    this.#samples++
    if (delayMs < this.#minDelay) this.#minDelay = delayMs
  }

  /** Whether a waiter that has waited `delayMs` is to be dropped: overloaded, and past twice the target. */
  expired(delayMs: number): boolean {
    return this.overloaded && delayMs > 2 * this.#targetMs
  }
}
