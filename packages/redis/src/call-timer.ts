/** A call that {@link CallTimer} watches. */
export interface Pending {
  /** `performance.now()` past which the call has timed out: its start plus the timeout. */
  readonly deadline: number
  /** True once the call was settled: by its answer (see {@link CallTimer.settle}) or by the timer. */
  done: boolean
  onTimeout(): void
}

/**
 * Gives up on calls that outlive a fixed timeout, with one timer for all of them instead
 * of a `setTimeout` and `clearTimeout` per call (about a microsecond each, at tens of
 * thousands of calls a second). Every call waits the same time, so deadlines come in the
 * order calls start: a FIFO whose head holds the next deadline. Calls answered in order
 * leave the queue as they settle; one answered out of order waits there, settled, until
 * the calls before it have. The timer is `unref`'d: a pending call never keeps a process
 * alive on its own.
 */
export class CallTimer {
  readonly ms: number
  #queue: Pending[] = []
  #head = 0
  #timer: ReturnType<typeof setTimeout> | undefined

  constructor(ms: number) {
    this.ms = ms
  }

  /** Watches a call: its `onTimeout` runs if it is not settled by its deadline. */
  watch(pending: Pending): void {
    this.#queue.push(pending)
    if (this.#timer === undefined) this.#arm(pending.deadline)
  }

  /**
   * Marks a call answered. False when the timer got there first (the caller has already
   * been told it timed out).
   */
  settle(pending: Pending): boolean {
    if (pending.done) return false
    pending.done = true
    this.#dropSettled()
    return true
  }

  #dropSettled(): void {
    const queue = this.#queue
    while (this.#head < queue.length && queue[this.#head]!.done) this.#head++
    if (this.#head === queue.length) {
      queue.length = 0
      this.#head = 0
    } else if (this.#head > 1024 && this.#head * 2 > queue.length) {
      this.#queue = queue.slice(this.#head)
      this.#head = 0
    }
  }

  #arm(deadline: number): void {
    this.#timer = setTimeout(this.#tick, Math.max(0, deadline - performance.now()))
    this.#timer.unref?.()
  }

  #tick = (): void => {
    this.#timer = undefined
    const now = performance.now()
    const queue = this.#queue
    for (let i = this.#head; i < queue.length; i++) {
      const pending = queue[i]!
      if (pending.done) continue
      if (pending.deadline > now) break
      pending.done = true
      pending.onTimeout()
    }
    this.#dropSettled()
    // A timeout handler may have started a call, and with it a timer: keep one.
    if (this.#head < this.#queue.length && this.#timer === undefined) {
      this.#arm(this.#queue[this.#head]!.deadline)
    }
  }
}
