/** How long a sample is preferred to a new one whose round trip was much longer. */
const RESAMPLE_MS = 5_000

// Read once: the getter is slow, and the origin never changes.
const ORIGIN = performance.timeOrigin

/** Wall-clock microseconds of this process, from the monotonic clock. */
function localUs(at: number): number {
  return (ORIGIN + at) * 1000
}

/**
 * An estimate of Redis's clock (`TIME`), from the general script's replies, which carry
 * it: what a take with a lease bases its deadline on (a take that reaches Redis after it
 * takes nothing). Its error is at most half the round trip of the sample, plus drift
 * since it was taken; the deadline leaves a second of slack for it.
 */
export class RedisClock {
  #offsetUs = 0
  #sampledAt = Number.NEGATIVE_INFINITY
  #rttMs = Number.POSITIVE_INFINITY

  /**
   * Redis's clock at `at` (`performance.now()`), in microseconds since the epoch: this
   * process's clock until a sample.
   */
  nowUs(at: number): number {
    return localUs(at) + this.#offsetUs
  }

  #stale(at: number): boolean {
    return at - this.#sampledAt > RESAMPLE_MS
  }

  /**
   * Takes Redis's `now` from a reply to a call sent at `sentAt` and answered at
   * `receivedAt` (`performance.now()`). A sample with a much longer round trip than the
   * current one is kept only once the current one is a few seconds old.
   */
  sample(redisNowUs: number, sentAt: number, receivedAt: number): void {
    const rtt = receivedAt - sentAt
    if (rtt > this.#rttMs * 2 + 1 && !this.#stale(receivedAt)) return
    this.#offsetUs = redisNowUs - localUs((sentAt + receivedAt) / 2)
    this.#rttMs = rtt
    this.#sampledAt = receivedAt
  }
}
