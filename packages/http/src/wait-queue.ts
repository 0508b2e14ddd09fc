import type { Clock } from '@sluice/core'

/** One request waiting under a key. */
export interface Waiter {
  readonly key: string
  /** Set while the waiter sleeps: ends its sleep early. */
  wake: (() => void) | undefined
  /** A wake-up that came while the waiter was busy asking the store: not lost, just early. */
  woken: boolean
}

const ignore = (): void => {}

/**
 * The per-key FIFO queue of requests waiting to be admitted, shared by the rate-limit
 * engine (waiting mode) and the bulkhead engine. Only the head of a key's queue asks the
 * store; the others sleep until they become the head, so requests are admitted in
 * arrival order and a newcomer never jumps the queue. The head sleeps until its permits
 * are due (a rate limit knows when) or until `wake(key)` (a bulkhead slot was released).
 *
 * @example
 * ```ts
 * const me = queue.join(key, maxQueue)
 * if (me === undefined) return refuse() // queue full
 * try {
 *   while (!(await tryTake())) await queue.sleep(me, delayMs, signal)
 * } finally {
 *   queue.leave(me)
 * }
 * ```
 */
export class KeyedWaitQueue {
  readonly #queues = new Map<string, Waiter[]>()
  readonly #clock: Clock

  constructor(clock: Clock) {
    this.#clock = clock
  }

  /** Whether anyone waits under `key`: a newcomer must then queue rather than take. */
  has(key: string): boolean {
    return this.#queues.has(key)
  }

  /** Requests waiting under `key`. */
  size(key: string): number {
    return this.#queues.get(key)?.length ?? 0
  }

  /** Joins the queue of `key`, or returns `undefined` when `maxQueue` already wait there. */
  join(key: string, maxQueue: number): Waiter | undefined {
    let queue = this.#queues.get(key)
    if ((queue?.length ?? 0) >= maxQueue) return undefined
    if (queue === undefined) {
      queue = []
      this.#queues.set(key, queue)
    }
    const waiter: Waiter = { key, wake: undefined, woken: false }
    queue.push(waiter)
    return waiter
  }

  /** Whether `waiter` is at the head of its queue: only the head asks the store. */
  isHead(waiter: Waiter): boolean {
    return this.#queues.get(waiter.key)?.[0] === waiter
  }

  /**
   * Sleeps until `ms` have passed (on the clock), the waiter is woken (it became the head,
   * or `wake` was called while it is), or `signal` aborts (rejects with its reason).
   * `ms` may be `Infinity`: then only a wake-up or the signal ends the sleep.
   */
  async sleep(waiter: Waiter, ms: number, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted()
    if (waiter.woken) {
      waiter.woken = false
      return
    }
    const timer = new AbortController()
    const woken = new Promise<void>((resolve) => {
      waiter.wake = resolve
    })
    const both = AbortSignal.any([signal, timer.signal])
    const slept =
      ms === Number.POSITIVE_INFINITY
        ? new Promise<void>((_, reject) => {
            both.addEventListener('abort', () => reject(both.reason), { once: true })
          })
        : this.#clock.sleep(Math.max(0, ms), both)
    try {
      await Promise.race([woken, slept])
    } finally {
      waiter.wake = undefined
      waiter.woken = false
      timer.abort()
      slept.catch(ignore)
    }
    // Aborted while the other branch won the race: the client is gone all the same.
    signal.throwIfAborted()
  }

  /** Wakes the head of `key`'s queue (a slot was released). */
  wake(key: string): void {
    const head = this.#queues.get(key)?.[0]
    if (head === undefined) return
    if (head.wake === undefined) head.woken = true
    else head.wake()
  }

  /** Wakes the head of every key's queue (the limits changed: each asks again). */
  wakeAll(): void {
    for (const key of this.#queues.keys()) this.wake(key)
  }

  /** Leaves the queue (admitted, refused or gone); a new head is woken to take its turn. */
  leave(waiter: Waiter): void {
    const queue = this.#queues.get(waiter.key)
    if (queue === undefined) return
    const index = queue.indexOf(waiter)
    if (index === -1) return
    queue.splice(index, 1)
    if (queue.length === 0) this.#queues.delete(waiter.key)
    else if (index === 0) this.wake(waiter.key)
  }
}
