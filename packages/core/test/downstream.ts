import type {
  AdaptiveConcurrencyLimiter,
  AdaptivePermit,
} from '../src/adaptive/adaptive-concurrency'
import type { ManualClock } from '../src/clock'

/** A downstream's behaviour while a test drives it; tests swap it to make it sicken and heal. */
export interface Health {
  /** Requests it serves at once. */
  workers: number
  /** Time one request takes with a worker to itself. */
  serviceMs: number
  /** Whether a request that took `rttMs` is released as dropped. Default: never. */
  drops?: (rttMs: number) => boolean
}

interface InFlight {
  readonly at: number
  readonly permit: AdaptivePermit
  readonly dropped: boolean
}

/**
 * Drives a limiter with more demand than it admits, deterministically: after every
 * completion the limiter is filled to its limit again, and a request entering with `n`
 * in flight takes `serviceMs × max(1, n / workers)`, the share of the workers it gets
 * (Little's law: past `workers`, every extra request in flight is queueing).
 */
export class Downstream {
  health: Health
  readonly #limiter: AdaptiveConcurrencyLimiter
  readonly #clock: ManualClock
  readonly #inFlight: InFlight[] = []

  constructor(limiter: AdaptiveConcurrencyLimiter, clock: ManualClock, health: Health) {
    this.#limiter = limiter
    this.#clock = clock
    this.health = health
  }

  /** Runs until the clock has moved `ms` further. */
  run(ms: number): void {
    const until = this.#clock.now() + ms
    this.#fill()
    for (;;) {
      const next = this.#inFlight[0]
      if (next === undefined || next.at > until) break
      this.#inFlight.shift()
      this.#clock.set(next.at)
      next.permit.release({ dropped: next.dropped })
      this.#fill()
    }
    this.#clock.set(until)
  }

  #fill(): void {
    const now = this.#clock.now()
    const { workers, serviceMs, drops } = this.health
    for (let permit = this.#limiter.tryEnter(); permit !== undefined; ) {
      const rtt = serviceMs * Math.max(1, this.#limiter.inFlight / workers)
      const entry: InFlight = { at: now + rtt, permit, dropped: drops?.(rtt) ?? false }
      // Keep completions in time order; equal times finish in the order they entered.
      let i = this.#inFlight.length
      while (i > 0 && (this.#inFlight[i - 1] as InFlight).at > entry.at) i--
      this.#inFlight.splice(i, 0, entry)
      permit = this.#limiter.tryEnter()
    }
  }
}
