import { describe } from './describe'
import type { Clock } from './types'

// setTimeout takes a signed 32-bit delay; longer sleeps are re-armed in chunks.
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * The default clock: `performance.now()`, which is monotonic, so NTP steps and manual
 * wall-clock changes neither release a flood nor freeze a limiter. `sleep` re-arms when
 * a timer fires early, so it never resolves before `now()` reaches the deadline.
 *
 * @example
 * ```ts
 * const started = systemClock.now()
 * await systemClock.sleep(100, AbortSignal.timeout(1000))
 * systemClock.now() - started >= 100 // true
 * ```
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason)
        return
      }
      const deadline = performance.now() + ms
      let timer: ReturnType<typeof setTimeout> | undefined
      const onAbort = (): void => {
        clearTimeout(timer)
        reject(signal?.reason)
      }
      const arm = (): void => {
        const left = deadline - performance.now()
        if (!(left > 0)) {
          signal?.removeEventListener('abort', onAbort)
          resolve()
          return
        }
        timer = setTimeout(arm, Math.min(Math.ceil(left), MAX_TIMER_MS))
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      arm()
    })
  },
}

interface Sleeper {
  readonly at: number
  readonly resolve: () => void
  readonly signal: AbortSignal | undefined
  readonly onAbort: () => void
}

/**
 * A clock that only moves when told to, for exact, instant tests. `sleep` resolves once
 * `advance`/`set` bring the clock to (or past) its deadline; sleepers with the same
 * deadline resolve in the order they started sleeping.
 *
 * @example
 * ```ts
 * const clock = new ManualClock()
 * const bucket = tokenBucket({ limit: 100, capacity: 3, clock })
 * bucket.tryAcquire(3) // true
 * bucket.tryAcquire()  // false
 * clock.advance(10)
 * bucket.tryAcquire()  // true
 * ```
 */
export class ManualClock implements Clock {
  #now: number
  readonly #sleepers: Sleeper[] = []

  constructor(startMs = 0) {
    if (typeof startMs !== 'number' || !Number.isFinite(startMs)) {
      throw new RangeError(
        `ManualClock: "startMs" must be a finite number, got ${describe(startMs)}`,
      )
    }
    this.#now = startMs
  }

  now(): number {
    return this.#now
  }

  /** How many `sleep` calls are still waiting: 0 means nothing was left behind. */
  get pendingSleeps(): number {
    return this.#sleepers.length
  }

  /** Moves time forward by `ms` and resolves every sleeper now due. */
  advance(ms: number): void {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      throw new RangeError(
        `ManualClock.advance: "ms" must be a finite non-negative number, got ${describe(ms)}`,
      )
    }
    this.#moveTo(this.#now + ms)
  }

  /** Moves time to `ms` (never backwards: the clock is monotonic) and resolves every sleeper now due. */
  set(ms: number): void {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < this.#now) {
      throw new RangeError(
        `ManualClock.set: "ms" must be a finite number not before now (${this.#now}), got ${describe(ms)}`,
      )
    }
    this.#moveTo(ms)
  }

  /**
   * Like `advance`, but stops at each sleeper's deadline in turn and lets promise
   * callbacks and immediates run before moving on, so code that sleeps again when it
   * wakes observes the exact times it asked for.
   */
  async advanceAsync(ms: number): Promise<void> {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      throw new RangeError(
        `ManualClock.advanceAsync: "ms" must be a finite non-negative number, got ${describe(ms)}`,
      )
    }
    const target = this.#now + ms
    await yieldToEventLoop()
    for (let next = this.#sleepers[0]; next !== undefined && next.at <= target; ) {
      this.#moveTo(next.at)
      await yieldToEventLoop()
      next = this.#sleepers[0]
    }
    this.#moveTo(target)
    await yieldToEventLoop()
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (!(ms > 0)) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      const sleeper: Sleeper = {
        at: this.#now + ms,
        resolve,
        signal,
        onAbort: () => {
          this.#remove(sleeper)
          reject(signal?.reason)
        },
      }
      signal?.addEventListener('abort', sleeper.onAbort, { once: true })
      this.#insert(sleeper)
    })
  }

  #moveTo(ms: number): void {
    this.#now = ms
    const sleepers = this.#sleepers
    let due = 0
    while (due < sleepers.length && (sleepers[due] as Sleeper).at <= ms) due++
    for (const sleeper of sleepers.splice(0, due)) {
      sleeper.signal?.removeEventListener('abort', sleeper.onAbort)
      sleeper.resolve()
    }
  }

  // Binary search for the first sleeper due strictly later, so equal deadlines stay FIFO.
  #insert(sleeper: Sleeper): void {
    const sleepers = this.#sleepers
    let low = 0
    let high = sleepers.length
    while (low < high) {
      const mid = (low + high) >>> 1
      if ((sleepers[mid] as Sleeper).at <= sleeper.at) low = mid + 1
      else high = mid
    }
    sleepers.splice(low, 0, sleeper)
  }

  #remove(sleeper: Sleeper): void {
    const index = this.#sleepers.indexOf(sleeper)
    if (index !== -1) this.#sleepers.splice(index, 1)
  }
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof setImmediate === 'function') setImmediate(resolve)
    else setTimeout(resolve, 0)
  })
}
