import { neverError, RateLimitError } from '../errors'
import type { Clock } from '../types'
import { Codel } from './codel'
import { DEFAULT_PRIORITY, partitionName, type QueueSettings } from './priority'

interface Waiter {
  readonly level: Level
  readonly permits: number
  /** When it started waiting. */
  readonly since: number
  /** Whether it holds one of the `maxQueue` places (a waiter owed a permit does not). */
  readonly counted: boolean
  readonly timeoutMs: number
  readonly resolve: () => void
  readonly reject: (reason: unknown) => void
  readonly signal: AbortSignal | undefined
  readonly onAbort: () => void
  readonly timer: AbortController | undefined
  older: Waiter | undefined
  newer: Waiter | undefined
  queued: boolean
}

/** The permits and waiters of one priority: a partition. */
class Level {
  inFlight = 0
  /** Permits its waiters ask for. */
  waiting = 0
  oldest: Waiter | undefined
  newest: Waiter | undefined

  constructor(
    readonly priority: number,
    readonly name: string,
    /** Its guaranteed share of the limit; 0 when it has none. */
    readonly share: number,
    readonly codel: Codel | undefined,
  ) {}
}

const ignore = (): void => {}

/**
 * The permits in flight and the queue of waiters of a concurrency limiter, by priority
 * (the concurrency limiter, the adaptive one and the HTTP bulkhead each keep one). The
 * owner supplies the limit, which may move; everything else is decided here:
 *
 * - Who goes next: a waiter whose partition is below its guaranteed share first (it lent
 *   that share out and is owed it back), then the highest priority; within a priority the
 *   oldest, or the newest while an `'adaptive-lifo'` queue is overloaded. Nobody takes a
 *   free permit while a waiter that goes before them waits, so a stream of callers cannot
 *   starve a waiter, and running work is never preempted.
 * - Who may wait: one owed a permit by its partition, or one that requests of lower
 *   priority in flight will make room for as they finish, waits outside `maxQueue`; others
 *   take one of its places. In a full queue a newcomer takes the place of the waiter of
 *   lower priority that would go last, who is refused.
 * - Who is shed (`'codel'`, `'adaptive-lifo'`): see {@link Codel}. An overloaded priority's
 *   waiters past twice the target are dropped, oldest first, whenever the queue is looked
 *   at (a release, an arrival); its newcomers that would wait longer than the target are
 *   refused at once, estimated from the permits ahead of them and the rate permits were
 *   released at over the last interval.
 *
 * With one priority, no partitions and `'fifo'`, this is the plain FIFO queue every
 * bulkhead had before priorities.
 *
 * @example
 * ```ts
 * const slots = new SlotQueue('db', () => 4, clock, readQueueSettings('db', {}, 10))
 * if (!slots.tryTake(1, PRIORITIES.critical)) {
 *   const joined = slots.join(1, PRIORITIES.critical, 1000, signal)
 *   if (joined instanceof RateLimitError) throw joined
 *   await joined
 * }
 * // ... later
 * slots.release(1, PRIORITIES.critical)
 * ```
 */
export class SlotQueue {
  readonly #name: string
  readonly #limit: () => number
  readonly #clock: Clock
  #settings: QueueSettings
  readonly #onTake: ((inFlight: number) => void) | undefined
  /** Whether refusals name their partition in the message (the limiter uses priorities). */
  readonly #partitioned: boolean
  /** Most important first. */
  readonly #levels: Level[] = []
  readonly #byPriority = new Map<number, Level>()
  #inFlight = 0
  #queued = 0
  /** Waiters holding one of the `maxQueue` places. */
  #counted = 0
  #rateStart = Number.NaN
  #released = 0
  /** Permits released per millisecond over the last whole interval (shedding policies). */
  #ratePerMs: number | undefined

  constructor(
    name: string,
    limit: () => number,
    clock: Clock,
    settings: QueueSettings,
    onTake?: (inFlight: number) => void,
  ) {
    this.#name = name
    this.#limit = limit
    this.#clock = clock
    this.#settings = settings
    this.#onTake = onTake
    this.#partitioned = settings.partitions.size > 0 || settings.policy !== 'fifo'
    for (const priority of settings.partitions.keys()) this.#level(priority)
  }

  /** Permits in flight, over every priority. */
  get inFlight(): number {
    return this.#inFlight
  }

  /** Callers waiting. */
  get queued(): number {
    return this.#queued
  }

  /** Permits in flight for one priority. */
  inFlightOf(priority: number): number {
    return this.#byPriority.get(priority)?.inFlight ?? 0
  }

  /**
   * Takes `permits` at `priority` if they fit under the limit now and no waiter goes
   * before the caller. Allocates nothing for a priority already in use.
   */
  tryTake(permits: number, priority: number): boolean {
    const limit = this.#limit()
    if (this.#inFlight + permits > limit) return false
    const level = this.#byPriority.get(priority)
    if (this.#queued > 0) {
      const next = this.#next(limit)
      const owed = this.#owed(priority, level?.inFlight ?? 0, permits, limit)
      if (next !== undefined && !this.#goesBefore(priority, owed, next, limit)) return false
    }
    const taker = level ?? this.#level(priority)
    this.#take(taker, permits)
    taker.codel?.sample(0, this.#clock.now(), this.#standing(taker, this.#clock.now()))
    return true
  }

  /**
   * Queues a caller that `tryTake` refused. Returns the refusal when it may not wait (no
   * place, a zero timeout, or shed), otherwise a promise that resolves once the permits
   * are taken for it, or rejects on its timeout, its signal, or when it is dropped.
   */
  join(
    permits: number,
    priority: number,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<void> | RateLimitError {
    const now = this.#clock.now()
    this.#shed(now)
    const limit = this.#limit()
    const level = this.#level(priority)
    let counted = false
    let victim: Waiter | undefined
    if (
      !this.#owed(priority, level.inFlight + level.waiting, permits, limit) &&
      !this.#claims(priority, permits)
    ) {
      counted = true
      if (this.#counted >= this.#settings.maxQueue) {
        victim = this.#victim(priority)
        if (victim === undefined) return this.#refuse(level, this.#queueFull(limit, level))
      }
    }
    if (timeoutMs === 0) {
      // Without a time axis the only wait known to be hopeless is none at all.
      return this.#refuse(level, this.#timeout(level, permits, timeoutMs, Number.POSITIVE_INFINITY))
    }
    const codel = level.codel
    if (codel !== undefined) {
      codel.observe(now, this.#standing(level, now))
      const expectedMs = codel.overloaded ? this.#expectedWait(level, permits, limit, now) : 0
      if (expectedMs > this.#settings.targetMs) {
        return this.#refuse(level, this.#shedError(level, permits, expectedMs))
      }
    }
    if (victim !== undefined) {
      this.#remove(victim)
      victim.reject(this.#displaced(victim))
    }
    return new Promise<void>((resolve, reject) => {
      const timer = timeoutMs === Number.POSITIVE_INFINITY ? undefined : new AbortController()
      const waiter: Waiter = {
        level,
        permits,
        since: now,
        counted,
        timeoutMs,
        resolve,
        reject,
        signal,
        timer,
        onAbort: () => this.#leave(waiter, () => waiter.reject(signal?.reason)),
        older: level.newest,
        newer: undefined,
        queued: true,
      }
      if (level.newest === undefined) level.oldest = waiter
      else level.newest.newer = waiter
      level.newest = waiter
      level.waiting += permits
      this.#queued++
      if (counted) this.#counted++
      signal?.addEventListener('abort', waiter.onAbort, { once: true })
      if (timer !== undefined) {
        this.#clock
          .sleep(timeoutMs, timer.signal)
          .then(
            () =>
              this.#leave(waiter, () => waiter.reject(this.#timeout(level, permits, timeoutMs, 0))),
            ignore,
          )
      }
      this.drain()
    })
  }

  /** Gives back permits taken at `priority` (the owner checked they are held) and serves waiters. */
  release(permits: number, priority: number): void {
    const level = this.#byPriority.get(priority) as Level
    level.inFlight -= permits
    this.#inFlight -= permits
    if (this.#settings.policy !== 'fifo') this.#countRelease(permits, this.#clock.now())
    this.drain()
    this.#prune(level)
  }

  /**
   * Gives back permits taken without a permit object (`tryAcquire`): those of the default
   * priority first, then the least important.
   */
  releaseAny(permits: number): void {
    let left = permits
    const fallback = this.#byPriority.get(DEFAULT_PRIORITY)
    const order = fallback === undefined ? [] : [fallback]
    for (let i = this.#levels.length - 1; i >= 0; i--) {
      const level = this.#levels[i] as Level
      if (level !== fallback) order.push(level)
    }
    for (const level of order) {
      const taken = Math.min(left, level.inFlight)
      if (taken === 0) continue
      level.inFlight -= taken
      this.#inFlight -= taken
      left -= taken
      if (left === 0) break
    }
    if (this.#settings.policy !== 'fifo') this.#countRelease(permits, this.#clock.now())
    this.drain()
    for (const level of order) this.#prune(level)
  }

  /**
   * After the owner's limit or `maxQueue` changed (`reconfigure`): rejects the waiters
   * asking more than the limit can ever hold, as `enter` would have, and serves the rest
   * in order. A shorter queue keeps its waiters: only newcomers find it full.
   */
  reconfigure(settings: QueueSettings, most: number): void {
    this.#settings = settings
    for (const level of this.#levels) {
      for (let waiter = level.oldest; waiter !== undefined; ) {
        const newer = waiter.newer
        if (waiter.permits > most) {
          this.#remove(waiter)
          waiter.reject(neverError(this.#name, waiter.permits, most))
        }
        waiter = newer
      }
    }
    this.drain()
    for (const level of [...this.#levels]) this.#prune(level)
  }

  /** Serves waiters while the next one fits (after a release, or when the limit rose). */
  drain(): void {
    if (this.#queued === 0) return
    const now = this.#clock.now()
    this.#shed(now)
    const limit = this.#limit()
    for (let next = this.#next(limit); next !== undefined; next = this.#next(limit)) {
      if (this.#inFlight + next.permits > limit) return
      const { level } = next
      this.#remove(next)
      level.codel?.sample(now - next.since, now, this.#standing(level, now))
      this.#take(level, next.permits)
      next.resolve()
    }
  }

  #level(priority: number): Level {
    let level = this.#byPriority.get(priority)
    if (level !== undefined) return level
    const { partitions, policy, targetMs, intervalMs } = this.#settings
    level = new Level(
      priority,
      partitionName(priority),
      partitions.get(priority) ?? 0,
      policy === 'fifo' ? undefined : new Codel(targetMs, intervalMs),
    )
    let at = 0
    while (at < this.#levels.length && (this.#levels[at] as Level).priority > priority) at++
    this.#levels.splice(at, 0, level)
    this.#byPriority.set(priority, level)
    return level
  }

  /**
   * Forgets a numbered priority nobody uses and that has no share, so any number may be a
   * priority. The named ones stay: the usual case allocates nothing per call.
   */
  #prune(level: Level): void {
    if (level.share > 0 || level.inFlight > 0 || level.oldest !== undefined) return
    if (level.name !== String(level.priority)) return
    if (this.#byPriority.get(level.priority) !== level) return
    this.#byPriority.delete(level.priority)
    this.#levels.splice(this.#levels.indexOf(level), 1)
  }

  #take(level: Level, permits: number): void {
    level.inFlight += permits
    this.#inFlight += permits
    this.#onTake?.(this.#inFlight)
  }

  /** Whether `permits` more at `priority`, with `used` already counted, fit in its guaranteed share. */
  #owed(priority: number, used: number, permits: number, limit: number): boolean {
    const share = this.#settings.partitions.get(priority)
    return share !== undefined && used + permits <= Math.floor(share * limit)
  }

  /**
   * Whether requests of lower priority in flight will, as they finish, make room for this
   * caller after every waiter of its priority or above: then it is worth waiting for.
   */
  #claims(priority: number, permits: number): boolean {
    let ahead = permits
    let below = 0
    for (const level of this.#levels) {
      if (level.priority >= priority) ahead += level.waiting
      else below += level.inFlight
    }
    return ahead <= below
  }

  /** The waiter served next: owed ones first, then by priority. */
  #next(limit: number): Waiter | undefined {
    let best: Waiter | undefined
    for (const level of this.#levels) {
      const waiter = this.#servedFirst(level)
      if (waiter === undefined) continue
      if (this.#owed(level.priority, level.inFlight, waiter.permits, limit)) return waiter
      best ??= waiter
    }
    return best
  }

  #servedFirst(level: Level): Waiter | undefined {
    return this.#lifo(level) ? level.newest : level.oldest
  }

  #lifo(level: Level): boolean {
    return this.#settings.policy === 'adaptive-lifo' && level.codel?.overloaded === true
  }

  /** Whether a caller at `priority` (`owed` a permit by its partition, or not) goes before `waiter`. */
  #goesBefore(priority: number, owed: boolean, waiter: Waiter, limit: number): boolean {
    const theirs = this.#owed(waiter.level.priority, waiter.level.inFlight, waiter.permits, limit)
    return owed === theirs ? priority > waiter.level.priority : owed
  }

  /** The counted waiter of lower priority than `priority` that would be served last. */
  #victim(priority: number): Waiter | undefined {
    for (let i = this.#levels.length - 1; i >= 0; i--) {
      const level = this.#levels[i] as Level
      if (level.priority >= priority) return undefined
      const lifo = this.#lifo(level)
      for (
        let w = lifo ? level.oldest : level.newest;
        w !== undefined;
        w = lifo ? w.newer : w.older
      ) {
        if (w.counted) return w
      }
    }
    return undefined
  }

  /** How long the oldest waiter of `level` has waited, or `undefined` when none waits. */
  #standing(level: Level, now: number): number | undefined {
    return level.oldest === undefined ? undefined : now - level.oldest.since
  }

  /** Drops, oldest first, the waiters of overloaded priorities past twice the target. */
  #shed(now: number): void {
    if (this.#settings.policy === 'fifo' || this.#queued === 0) return
    // Backwards, so a level pruned on the way does not make the loop skip the next one.
    for (let i = this.#levels.length - 1; i >= 0; i--) {
      const level = this.#levels[i] as Level
      const codel = level.codel as Codel
      codel.observe(now, this.#standing(level, now))
      for (
        let w = level.oldest;
        w !== undefined && codel.expired(now - w.since);
        w = level.oldest
      ) {
        this.#remove(w)
        w.reject(this.#dropped(w, now))
      }
      this.#prune(level)
    }
  }

  /** Permits that go before a newcomer, over the release rate: its expected wait. */
  #expectedWait(level: Level, permits: number, limit: number, now: number): number {
    this.#rollRate(now)
    const rate = this.#ratePerMs
    if (rate === undefined) return 0
    const owed = this.#owed(level.priority, level.inFlight, permits, limit)
    let ahead = permits
    for (const other of this.#levels) {
      if (other === level) {
        if (!this.#lifo(level)) ahead += level.waiting
        continue
      }
      const first = this.#servedFirst(other)
      if (first !== undefined && !this.#goesBefore(level.priority, owed, first, limit)) {
        ahead += other.waiting
      }
    }
    return rate === 0 ? Number.POSITIVE_INFINITY : ahead / rate
  }

  #countRelease(permits: number, now: number): void {
    this.#rollRate(now)
    this.#released += permits
  }

  #rollRate(now: number): void {
    if (Number.isNaN(this.#rateStart)) {
      this.#rateStart = now
      return
    }
    const elapsed = now - this.#rateStart
    if (elapsed < this.#settings.intervalMs) return
    this.#ratePerMs = this.#released / elapsed
    this.#released = 0
    this.#rateStart = now
  }

  /** Takes a waiter out of the queue, if it is still there, and settles it with `settle`. */
  #leave(waiter: Waiter, settle: () => void): void {
    if (!waiter.queued) return
    this.#remove(waiter)
    settle()
    // A large request that could not fit may have been holding back smaller ones.
    this.drain()
    this.#prune(waiter.level)
  }

  #remove(waiter: Waiter): void {
    const { level } = waiter
    waiter.queued = false
    if (waiter.older === undefined) level.oldest = waiter.newer
    else waiter.older.newer = waiter.newer
    if (waiter.newer === undefined) level.newest = waiter.older
    else waiter.newer.older = waiter.older
    level.waiting -= waiter.permits
    this.#queued--
    if (waiter.counted) this.#counted--
    waiter.signal?.removeEventListener('abort', waiter.onAbort)
    waiter.timer?.abort()
  }

  #refuse(level: Level, error: RateLimitError): RateLimitError {
    this.#prune(level)
    return error
  }

  #suffix(level: Level): string {
    return this.#partitioned || level.priority !== DEFAULT_PRIORITY
      ? ` (partition "${level.name}")`
      : ''
  }

  #queueFull(limit: number, level: Level): RateLimitError {
    return new RateLimitError('ERR_SLUICE_QUEUE_FULL', {
      limiter: this.#name,
      partition: level.name,
      message: `${this.#name}: ${limit} in flight and the wait queue is full (maxQueue ${this.#settings.maxQueue})${this.#suffix(level)}`,
    })
  }

  #displaced(waiter: Waiter): RateLimitError {
    return new RateLimitError('ERR_SLUICE_QUEUE_FULL', {
      limiter: this.#name,
      partition: waiter.level.name,
      message: `${this.#name}: the wait queue is full and a request of higher priority took this place${this.#suffix(waiter.level)}`,
    })
  }

  #timeout(level: Level, permits: number, timeoutMs: number, retryAfterMs: number) {
    return new RateLimitError('ERR_SLUICE_TIMEOUT', {
      limiter: this.#name,
      partition: level.name,
      // A bulkhead cannot tell when a permit frees: 0 means unknown.
      retryAfterMs,
      message: `${this.#name}: ${permits} permit(s) not available within ${timeoutMs} ms${this.#suffix(level)}`,
    })
  }

  #shedError(level: Level, permits: number, expectedMs: number): RateLimitError {
    const expected = Number.isFinite(expectedMs) ? `about ${Math.ceil(expectedMs)} ms` : 'forever'
    return new RateLimitError('ERR_SLUICE_TIMEOUT', {
      limiter: this.#name,
      partition: level.name,
      message: `${this.#name}: ${permits} permit(s) would wait ${expected}, over the queue target of ${this.#settings.targetMs} ms${this.#suffix(level)}`,
    })
  }

  #dropped(waiter: Waiter, now: number): RateLimitError {
    return new RateLimitError('ERR_SLUICE_TIMEOUT', {
      limiter: this.#name,
      partition: waiter.level.name,
      message: `${this.#name}: dropped after waiting ${Math.ceil(now - waiter.since)} ms, over twice the queue target of ${this.#settings.targetMs} ms${this.#suffix(waiter.level)}`,
    })
  }
}
