/** Most releases kept for replay; beyond it the oldest are dropped (their leases expire). */
const MAX_PENDING = 10_000

interface Release {
  readonly key: string
  readonly member: string
  /** `performance.now()` before which it must not be sent. */
  readonly notBefore: number
}

/**
 * Concurrency releases that did not reach Redis, kept to be sent again once it answers
 * (issue 19: a release lost in a failover held its slot for `leaseTtl` after Redis was
 * back, and a full bulkhead refused everything meanwhile). A release is a `ZREM` of the
 * lease, idempotent, so sending one twice, or for a lease that was never written, is
 * harmless. Bounded: past {@link MAX_PENDING} the oldest are dropped and left to expire.
 */
export class PendingReleases {
  #items: Release[] = []
  #flushing = false

  get size(): number {
    return this.#items.length
  }

  add(key: string, member: string, notBefore = 0): void {
    if (this.#items.length >= MAX_PENDING) this.#items.shift()
    this.#items.push({ key, member, notBefore })
  }

  /**
   * Sends every release that is due and whose shard is in use (`usable`); those that fail
   * stay for the next flush. One flush at a time.
   */
  async flush(
    send: (key: string, member: string) => Promise<unknown>,
    usable: (key: string) => boolean,
  ): Promise<void> {
    if (this.#flushing || this.#items.length === 0) return
    this.#flushing = true
    const now = performance.now()
    const due: Release[] = []
    const waiting: Release[] = []
    for (const item of this.#items) {
      ;(item.notBefore <= now && usable(item.key) ? due : waiting).push(item)
    }
    this.#items = waiting
    try {
      const outcomes = await Promise.allSettled(due.map((item) => send(item.key, item.member)))
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'rejected') this.#items.push(due[i]!)
      })
    } finally {
      this.#flushing = false
    }
  }

  /** Forgets every pending release (`resetAll` removed the leases anyway). */
  clear(): void {
    this.#items = []
  }
}
