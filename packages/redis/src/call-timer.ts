/** A call that {@link CallTimer} watches: settle it by setting `done`. */
export interface Pending {
  readonly deadline: number
  /** Set by whoever settles the call first: its answer, or the timer. */
  done: boolean
  readonly onTimeout: () => void
}

/**
 * Gives up on calls that outlive a fixed timeout, with one timer for all of them instead
 * of a `setTimeout` and `clearTimeout` per call (about a microsecond each, at tens of
 * thousands of calls a second). Every call waits the same time, so deadlines come in the
 * order calls start: a FIFO whose head holds the next deadline. Settled calls are
 * dropped lazily when the timer reaches them. The timer is `unref`'d: a pending call
 * never keeps a process alive on its own.
 */
export class CallTimer {
  readonly ms: number
  #queue: Pending[] = []
  #head = 0
  #timer: ReturnType<typeof setTimeout> | undefined

  constructor(ms: number) {
    this.ms = ms
  }

  /** Watches a call that starts now; `onTimeout` runs if it is not `done` by its deadline. */
  start(onTimeout: () => void): Pending {
    const pending: Pending = { deadline: performance.now() + this.ms, done: false, onTimeout }
    this.#queue.push(pending)
    if (this.#timer === undefined) this.#arm(pending.deadline)
    return pending
  }

  #arm(deadline: number): void {
    this.#timer = setTimeout(this.#tick, Math.max(0, deadline - performance.now()))
    this.#timer.unref?.()
  }

  #tick = (): void => {
    this.#timer = undefined
    const now = performance.now()
    const queue = this.#queue
    while (this.#head < queue.length) {
      const pending = queue[this.#head]!
      if (!pending.done) {
        if (pending.deadline > now) break
        pending.done = true
        pending.onTimeout()
      }
      this.#head++
    }
    if (this.#head === queue.length) {
      this.#queue = []
      this.#head = 0
    } else {
      if (this.#head > 1024) {
        this.#queue = queue.slice(this.#head)
        this.#head = 0
      }
      // A timeout handler may have started a call, and with it a timer: keep one.
      if (this.#timer !== undefined) clearTimeout(this.#timer)
      this.#arm(this.#queue[this.#head]!.deadline)
    }
  }
}
