import { readCarry } from '../carry'
import { neverError, RateLimitError } from '../errors'
import {
  invalidPermits,
  isPermitCount,
  readEnterOptions,
  readEnterWaitOptions,
  readMaxQueue,
} from '../options'
import {
  DEFAULT_PRIORITY,
  PRIORITY_OPTIONS,
  type QueueSettings,
  readQueueReconfigure,
  readQueueSettings,
} from '../priority/priority'
import { SlotQueue } from '../priority/slot-queue'
import type {
  Clock,
  CommonOptions,
  ConcurrencyLimiter,
  Duration,
  EnterOptions,
  LimiterSpec,
  Permit,
  PriorityOptions,
  ReconfigureOptions,
  ReconfigureSpec,
  WaitOptions,
} from '../types'
import {
  describe,
  readClock,
  readFunction,
  readInteger,
  readName,
  readOneOf,
  readOptions,
  readPositiveDuration,
  readPositiveInteger,
} from '../validation'
import { warnIfBareMilliseconds } from '../warnings'
import { AIMD_OPTIONS, type AimdOptions, aimd } from './aimd'
import { GRADIENT2_OPTIONS, type Gradient2Options, gradient2 } from './gradient2'
import { readNumber } from './read-number'
import type { LimitUpdate, SampleWindow } from './sample-window'
import { VEGAS_OPTIONS, type VegasOptions, vegas } from './vegas'

export type { AimdOptions, Gradient2Options, VegasOptions }

/** The algorithms {@link adaptiveConcurrency} can run. */
export type AdaptiveAlgorithm = 'gradient2' | 'vegas' | 'aimd'

/** Why the limit moved. */
export type LimitChangeReason =
  /** A sampling window closed and the algorithm moved the limit. */
  | 'update'
  /** A probe began: the limit drops to `probeConcurrency` to measure the no-load latency. */
  | 'probe'
  /** The probe ended: the limit is back to the algorithm's estimate. */
  | 'probed'
  /** `reconfigure` moved the bounds (or, with `carry: 'reset'`, started over with a probe). */
  | 'reconfigure'

/** What `onLimitChange` receives each time the limit moves. */
export interface LimitChange {
  /** The new limit. */
  readonly limit: number
  /** The limit before. */
  readonly previous: number
  readonly algorithm: AdaptiveAlgorithm
  readonly reason: LimitChangeReason
  /** The closing window's mean latency in milliseconds (`'update'` only). */
  readonly rtt?: number
  /** The no-load latency the algorithm compares against, once measured. */
  readonly noLoadRtt?: number
}

/** Options every algorithm of {@link adaptiveConcurrency} takes. */
export interface AdaptiveConcurrencyCommonOptions extends CommonOptions, PriorityOptions {
  /** The limit after the first no-load probe, clamped to [min, max]. Default 20. */
  initial?: number
  /** The limit never goes below this. Default 1. */
  min?: number
  /** The limit never goes above this. Default 1000 (Envoy's default too). */
  max?: number
  /**
   * Callers that may wait in `enter`. Default 0. Callers owed a permit by their partition,
   * or outranking requests in flight, may wait besides.
   */
  maxQueue?: number
  /**
   * Shortest sampling window: the limit moves at most once per window, and a window also
   * lasts at least twice the no-load latency and 10 requests. Default `'100ms'`.
   */
  updateInterval?: Duration
  /** Time between no-load probes, before jitter. Default `'30s'`. */
  probeInterval?: Duration
  /**
   * Each probe starts up to this share of `probeInterval` late, at random, so processes
   * started together do not all probe at once. In [0, 1]. Default 0.15.
   */
  probeJitter?: number
  /** The limit while probing (clamped to [min, max]). Default 3. */
  probeConcurrency?: number
  /** Requests admitted during a probe whose mean latency becomes the no-load latency. Default 50. */
  probeSamples?: number
  /**
   * Called synchronously whenever the limit moves (`subscribe` adds more listeners later).
   * A listener that throws does not disturb the limiter: its error is rethrown from a
   * microtask.
   */
  onLimitChange?: (change: LimitChange) => void
  /** Source of the probe jitter, in [0, 1). Default `Math.random`; inject one for repeatable runs. */
  random?: () => number
}

/** Options of {@link adaptiveConcurrency}: the common ones plus the chosen algorithm's knobs. */
export type AdaptiveConcurrencyOptions = AdaptiveConcurrencyCommonOptions &
  (
    | ({ algorithm?: 'gradient2' } & Gradient2Options)
    | ({ algorithm: 'vegas' } & VegasOptions)
    | ({ algorithm: 'aimd' } & AimdOptions)
  )

/** How a request went, for the permit that covered it. */
export interface PermitOutcome {
  /** The request timed out, was shed downstream, or failed from overload (a 503, say). */
  dropped?: boolean
  /**
   * The caller gave up (a client that hung up): the time it held the permit says nothing
   * about the downstream, so it is no latency sample at all, and no drop either (as
   * Netflix's `onIgnore`).
   */
  aborted?: boolean
}

/** A held slot of an adaptive limiter; its release records the request's latency. */
export interface AdaptivePermit extends Permit {
  /**
   * Frees the permits and records one latency sample: the clock time since the permit
   * was granted, and `outcome.dropped`; an `aborted` one records nothing. A second
   * explicit call throws.
   */
  release(outcome?: PermitOutcome): void
}

/**
 * A concurrency limiter whose limit follows the downstream's latency. Usable wherever a
 * {@link ConcurrencyLimiter} is; `max` is the live limit, like `limit`.
 */
export interface AdaptiveConcurrencyLimiter extends ConcurrencyLimiter {
  readonly algorithm: AdaptiveAlgorithm
  /** The current limit: permits that may be in flight now. */
  readonly limit: number
  /** The same as `limit`, for code that reads a concurrency limiter's `max`. */
  readonly max: number
  readonly minLimit: number
  readonly maxLimit: number
  /** Mean latency of the last probe in milliseconds; `undefined` until the first ends. */
  readonly noLoadRtt: number | undefined
  /** Whether a probe is measuring the no-load latency now. */
  readonly probing: boolean
  /**
   * Calls `listener` on every later limit change, as `onLimitChange` does, for code that
   * did not create the limiter (an HTTP layer publishing events). Returns a function that
   * stops it. A function subscribed twice is called once.
   */
  subscribe(listener: (change: LimitChange) => void): () => void
  /**
   * Changes the options while the limiter runs: a whole set of them (left out: defaults),
   * of the same `algorithm` (left out: the limiter's own); `name`, `clock`,
   * `onLimitChange` and `random` may be given only as they are, and priorities stay as
   * built. What it learned carries over in every mode but `carry: 'reset'`: the latency
   * estimate, clamped to the new [`min`, `max`], and the no-load latency (a limit measures
   * the downstream, not a share of a budget, so there is nothing to scale). `'reset'`
   * starts over as a new limiter does, with a probe. Permits in flight are never revoked;
   * queued waiters keep their order.
   */
  reconfigure(
    options:
      | AdaptiveConcurrencyOptions
      | (ReconfigureSpec<Extract<LimiterSpec, { algorithm: 'concurrency' }>> & PriorityOptions),
    reconfigure?: ReconfigureOptions,
  ): void
  tryEnter(options?: number | EnterOptions): AdaptivePermit | undefined
  enter(options?: WaitOptions & EnterOptions): Promise<AdaptivePermit>
}

interface Settings {
  readonly name: string
  readonly algorithm: AdaptiveAlgorithm
  readonly clock: Clock
  readonly update: LimitUpdate
  readonly initial: number
  readonly min: number
  readonly max: number
  readonly queue: QueueSettings
  readonly updateIntervalMs: number
  readonly probeIntervalMs: number
  readonly probeJitter: number
  readonly probeLimit: number
  readonly probeSamples: number
  readonly onLimitChange: ((change: LimitChange) => void) | undefined
  readonly random: () => number
}

/** Fewer samples than this say too little about a window's latency to act on (Netflix's default). */
const MIN_WINDOW_SAMPLES = 10
/** Envoy re-measures the no-load latency after this many windows in a row at the minimum limit. */
const WINDOWS_AT_MIN_BEFORE_PROBE = 5

class SampledPermit implements AdaptivePermit {
  readonly permits: number
  readonly priority: number
  readonly startedAt: number
  /** The probe this permit was granted in, or 0: only a probe's own requests measure it. */
  readonly probe: number
  #limiter: AdaptiveLimiter | undefined

  constructor(
    limiter: AdaptiveLimiter,
    permits: number,
    priority: number,
    startedAt: number,
    probe: number,
  ) {
    this.#limiter = limiter
    this.permits = permits
    this.priority = priority
    this.startedAt = startedAt
    this.probe = probe
  }

  release(outcome?: PermitOutcome): void {
    const limiter = this.#limiter
    if (limiter === undefined) {
      throw new Error(`adaptiveConcurrency: this permit (${this.permits}) was already released`)
    }
    this.#limiter = undefined
    limiter.complete(this, outcome?.dropped === true, outcome?.aborted === true)
  }

  // After an explicit release this is a no-op, so `using` plus an early release is safe.
  [Symbol.dispose](): void {
    if (this.#limiter !== undefined) this.release()
  }
}

class AdaptiveLimiter implements AdaptiveConcurrencyLimiter {
  readonly name: string
  readonly algorithm: AdaptiveAlgorithm
  #settings: Settings
  readonly #slots: SlotQueue
  readonly #listeners = new Set<(change: LimitChange) => void>()
  /** The algorithm's real-valued limit; the live limit is its floor outside probes. */
  #estimate: number
  #limit: number
  #noLoadRtt: number | undefined
  /** Number of the probe under way, 0 when none is. */
  #probe = 1
  #probesStarted = 1
  #probeSum = 0
  #probeCount = 0
  #nextProbeAt = Number.POSITIVE_INFINITY
  #windowStart = 0
  #windowSum = 0
  #windowCount = 0
  #windowMaxInFlight = 0
  #windowDropped = false
  #windowsAtMin = 0

  constructor(settings: Settings) {
    this.#settings = settings
    this.name = settings.name
    this.algorithm = settings.algorithm
    this.#estimate = settings.initial
    // Like Envoy, start by measuring: no algorithm can judge latency before it knows the no-load one.
    this.#limit = settings.probeLimit
    if (settings.onLimitChange !== undefined) this.#listeners.add(settings.onLimitChange)
    this.#slots = new SlotQueue(
      settings.name,
      () => this.#limit,
      settings.clock,
      settings.queue,
      (inFlight) => {
        if (inFlight > this.#windowMaxInFlight) this.#windowMaxInFlight = inFlight
      },
    )
  }

  get minLimit(): number {
    return this.#settings.min
  }

  get maxLimit(): number {
    return this.#settings.max
  }

  get maxQueue(): number {
    return this.#settings.queue.maxQueue
  }

  get limit(): number {
    return this.#limit
  }

  reconfigure(
    options:
      | AdaptiveConcurrencyOptions
      | (ReconfigureSpec<Extract<LimiterSpec, { algorithm: 'concurrency' }>> & PriorityOptions),
    reconfigure?: ReconfigureOptions,
  ): void {
    const method = 'adaptiveConcurrency.reconfigure'
    const given = readOptions(method, options as AdaptiveConcurrencyOptions, [
      ...COMMON_OPTIONS,
      ...Object.values(ALGORITHMS).flatMap((a) => a.knobs),
    ]) as AdaptiveConcurrencyOptions & Readonly<Record<string, unknown>>
    if (given.algorithm !== undefined && given.algorithm !== this.algorithm) {
      throw new TypeError(
        `${method}: "algorithm" must be '${this.algorithm}', got ${describe(given.algorithm)} (a limiter keeps its algorithm: build a new one to change it)`,
      )
    }
    const current = this.#settings
    const own = {
      name: current.name,
      clock: current.clock,
      onLimitChange: current.onLimitChange,
      random: current.random,
    }
    for (const [option, value] of Object.entries(own)) {
      if (given[option] !== undefined && given[option] !== value) {
        throw new TypeError(`${method}: "${option}" cannot change; pass the limiter's own or none`)
      }
    }
    const read = readSettings(method, {
      ...given,
      algorithm: this.algorithm,
      ...own,
    } as AdaptiveConcurrencyOptions)
    const queue = readQueueReconfigure(method, given, current.queue, read.queue.maxQueue)
    const carry = readCarry(method, reconfigure)
    const settings = { ...read, queue }
    this.#settings = settings
    if (carry === 'reset') {
      this.#estimate = settings.initial
      this.#noLoadRtt = undefined
      this.#windowsAtMin = 0
      this.#startProbe()
    } else {
      this.#estimate = Math.min(settings.max, Math.max(settings.min, this.#estimate))
      if (this.#probe === 0) {
        // A window under the old bounds says nothing about the new ones.
        this.#startWindow(settings.clock.now())
        this.#setLimit(Math.floor(this.#estimate), 'reconfigure')
      } else {
        this.#setLimit(settings.probeLimit, 'reconfigure')
      }
    }
    this.#slots.reconfigure(queue, settings.max)
  }

  get max(): number {
    return this.#limit
  }

  get inFlight(): number {
    return this.#slots.inFlight
  }

  get queued(): number {
    return this.#slots.queued
  }

  get noLoadRtt(): number | undefined {
    return this.#noLoadRtt
  }

  get probing(): boolean {
    return this.#probe !== 0
  }

  tryAcquire(permits = 1): boolean {
    if (permits !== 1 && !isPermitCount(permits)) {
      throw invalidPermits('adaptiveConcurrency.tryAcquire', permits)
    }
    this.#maybeStartProbe(this.#settings.clock.now())
    return this.#slots.tryTake(permits, DEFAULT_PRIORITY)
  }

  availablePermits(): number {
    return Math.max(0, this.#limit - this.#slots.inFlight)
  }

  release(permits = 1): void {
    if (!isPermitCount(permits)) throw invalidPermits('adaptiveConcurrency.release', permits)
    this.#checkHeld(permits, this.#slots.inFlight)
    this.#slots.releaseAny(permits)
  }

  tryEnter(options?: number | EnterOptions): AdaptivePermit | undefined {
    const { permits, priority } = readEnterOptions('adaptiveConcurrency.tryEnter', options)
    const now = this.#settings.clock.now()
    this.#maybeStartProbe(now)
    return this.#slots.tryTake(permits, priority)
      ? new SampledPermit(this, permits, priority, now, this.#probe)
      : undefined
  }

  subscribe(listener: (change: LimitChange) => void): () => void {
    if (typeof listener !== 'function') {
      throw new TypeError(
        `adaptiveConcurrency.subscribe: "listener" must be a function, got ${describe(listener)}`,
      )
    }
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  async enter(options?: WaitOptions & EnterOptions): Promise<AdaptivePermit> {
    const method = 'adaptiveConcurrency.enter'
    const { timeoutMs, signal, permits, priority } = readEnterWaitOptions(method, options)
    signal?.throwIfAborted()
    if (permits > this.maxLimit) throw neverError(this.name, permits, this.maxLimit)
    const entered = this.tryEnter({ permits, priority })
    if (entered !== undefined) return entered
    const joined = this.#slots.join(permits, priority, timeoutMs, signal)
    if (joined instanceof RateLimitError) throw joined
    await joined
    // Latency is the downstream's time: it starts when the permit is granted, not queued.
    return new SampledPermit(this, permits, priority, this.#settings.clock.now(), this.#probe)
  }

  /**
   * Called by a permit's release: frees its permits and records its latency, unless its
   * caller gave up: a client that hangs up early would make the downstream look fast.
   */
  complete(permit: SampledPermit, dropped: boolean, aborted: boolean): void {
    const now = this.#settings.clock.now()
    const rtt = now - permit.startedAt
    this.#checkHeld(permit.permits, this.#slots.inFlightOf(permit.priority))
    this.#slots.release(permit.permits, permit.priority)
    if (aborted) return
    if (this.#probe !== 0) {
      // Requests admitted before the probe ran at the old limit: they would measure the queue.
      if (permit.probe === this.#probe) this.#addProbeSample(rtt, now)
    } else {
      this.#addWindowSample(rtt, dropped, now)
    }
  }

  // Over-release is a bug (a double release) that would silently raise the limit.
  #checkHeld(permits: number, held: number): void {
    if (permits > held) {
      throw new RangeError(
        `adaptiveConcurrency.release: cannot release ${permits} permit(s), only ${held} held`,
      )
    }
  }

  #maybeStartProbe(now: number): void {
    if (now >= this.#nextProbeAt) this.#startProbe()
  }

  #startProbe(): void {
    this.#probesStarted++
    this.#probe = this.#probesStarted
    this.#probeSum = 0
    this.#probeCount = 0
    this.#nextProbeAt = Number.POSITIVE_INFINITY
    this.#setLimit(this.#settings.probeLimit, 'probe')
  }

  #addProbeSample(rtt: number, now: number): void {
    this.#probeSum += rtt
    this.#probeCount++
    if (this.#probeCount < this.#settings.probeSamples) return
    const { probeIntervalMs, probeJitter, random } = this.#settings
    this.#noLoadRtt = this.#probeSum / this.#probeCount
    this.#probe = 0
    this.#nextProbeAt = now + probeIntervalMs * (1 + probeJitter * random())
    this.#startWindow(now)
    this.#windowsAtMin = 0
    this.#setLimit(Math.floor(this.#estimate), 'probed')
  }

  #startWindow(now: number): void {
    this.#windowStart = now
    this.#windowSum = 0
    this.#windowCount = 0
    this.#windowMaxInFlight = this.#slots.inFlight
    this.#windowDropped = false
  }

  #addWindowSample(rtt: number, dropped: boolean, now: number): void {
    this.#windowSum += rtt
    this.#windowCount++
    if (dropped) this.#windowDropped = true
    const noLoadRtt = this.#noLoadRtt as number
    // Shorter than two no-load round trips, a window mostly holds requests admitted
    // before the last change and cannot show its effect.
    const length = Math.max(this.#settings.updateIntervalMs, 2 * noLoadRtt)
    if (this.#windowCount < MIN_WINDOW_SAMPLES || now - this.#windowStart < length) return
    const window: SampleWindow = {
      rtt: this.#windowSum / this.#windowCount,
      noLoadRtt,
      maxInFlight: this.#windowMaxInFlight,
      dropped: this.#windowDropped,
    }
    const { min, max, update } = this.#settings
    const next = update(this.#estimate, window)
    // A user's queueSize function could return anything: a NaN estimate would stick.
    if (!Number.isNaN(next)) this.#estimate = Math.min(max, Math.max(min, next))
    this.#startWindow(now)
    this.#setLimit(Math.floor(this.#estimate), 'update', window.rtt)
    // Pinned at the minimum, the no-load latency itself may have moved (Envoy's rule).
    this.#windowsAtMin = this.#limit === min ? this.#windowsAtMin + 1 : 0
    if (this.#windowsAtMin >= WINDOWS_AT_MIN_BEFORE_PROBE) this.#startProbe()
  }

  #setLimit(limit: number, reason: LimitChangeReason, rtt?: number): void {
    const previous = this.#limit
    if (limit === previous) return
    this.#limit = limit
    if (limit > previous) this.#slots.drain()
    if (this.#listeners.size === 0) return
    const change: LimitChange = {
      limit,
      previous,
      algorithm: this.algorithm,
      reason,
      ...(rtt === undefined ? {} : { rtt }),
      ...(this.#noLoadRtt === undefined ? {} : { noLoadRtt: this.#noLoadRtt }),
    }
    for (const listener of this.#listeners) {
      try {
        listener(change)
      } catch (error) {
        // The limiter's state is already consistent; a listener's bug must not fail a
        // release, nor keep the other listeners from hearing of the change.
        queueMicrotask(() => {
          throw error
        })
      }
    }
  }
}

const COMMON_OPTIONS = [
  'algorithm',
  'initial',
  'min',
  'max',
  'maxQueue',
  'updateInterval',
  'probeInterval',
  'probeJitter',
  'probeConcurrency',
  'probeSamples',
  'onLimitChange',
  'random',
  'name',
  'clock',
  ...PRIORITY_OPTIONS,
] as const

/** Netflix concurrency-limits' and Envoy's names for our options. */
const RENAMED: Readonly<Record<string, string>> = {
  initialLimit: 'use "initial"',
  minLimit: 'use "min"',
  maxLimit: 'use "max"',
  maxConcurrency: 'use "max"',
  maxConcurrencyLimit: 'use "max"',
  minConcurrency: 'use "probeConcurrency"',
  rttTolerance: 'use "tolerance"',
}

const ALGORITHMS: Record<
  AdaptiveAlgorithm,
  { knobs: readonly string[]; build: (factory: string, options: never) => LimitUpdate }
> = {
  gradient2: { knobs: GRADIENT2_OPTIONS, build: gradient2 },
  vegas: { knobs: VEGAS_OPTIONS, build: vegas },
  aimd: { knobs: AIMD_OPTIONS, build: aimd },
}

/**
 * A bulkhead that finds its own limit: a concurrency limiter whose limit follows the
 * latency of the requests it admits (Little's law), as Netflix's concurrency-limits and
 * Envoy's adaptive concurrency filter do. Every `updateInterval` (at least 10 requests and
 * two no-load round trips) the `algorithm` compares the window's mean latency with the
 * no-load latency and moves the limit within [`min`, `max`]: `'gradient2'` (default)
 * shrinks in proportion to queueing, `'vegas'` holds an estimated queue of a few
 * requests, `'aimd'` adds one per window and backs off on drops or high latency.
 *
 * The no-load latency is measured, as Envoy does, by a probe: the limit drops to
 * `probeConcurrency` (3) until `probeSamples` (50) requests admitted during the probe
 * complete (aborted ones do not count), their mean becomes the no-load latency, and the
 * limit returns. The first
 * probe runs from creation (the limit is `probeConcurrency` until it ends, then `initial`),
 * then one every `probeInterval` (30 s) plus up to `probeJitter` (15 %) of it, and
 * whenever the limit sits at `min` for 5 windows in a row.
 *
 * Latency is sampled by permits: `tryEnter`/`enter` give a permit whose
 * `release({ dropped })` records the time since it was granted. `tryAcquire`/`release`
 * only count, and record nothing: traffic through them alone never moves the limit.
 * Per process only: the limit is this process's view of its downstream.
 *
 * Priorities, `partitions` and `queuePolicy` work as on `concurrency()`, with shares of
 * the live limit.
 *
 * @example
 * ```ts
 * const downstream = adaptiveConcurrency({
 *   algorithm: 'gradient2',
 *   max: 200,
 *   onLimitChange: ({ limit, reason }) => console.log(`limit ${limit} (${reason})`),
 * })
 * const permit = downstream.tryEnter()
 * if (permit === undefined) throw new Error('503: overloaded')
 * try {
 *   await callDownstream()
 *   permit.release()
 * } catch (error) {
 *   permit.release({ dropped: isTimeout(error) })
 *   throw error
 * }
 * ```
 */
export function adaptiveConcurrency(
  options: AdaptiveConcurrencyOptions = {},
): AdaptiveConcurrencyLimiter {
  return new AdaptiveLimiter(readSettings('adaptiveConcurrency', options))
}

/** Validates the options of `adaptiveConcurrency` (or its `reconfigure`, named by `factory`). */
function readSettings(factory: string, options: AdaptiveConcurrencyOptions): Settings {
  readOptions(
    factory,
    options,
    [...COMMON_OPTIONS, ...Object.values(ALGORITHMS).flatMap((a) => a.knobs)],
    RENAMED,
  )
  const algorithm = readOneOf(
    factory,
    'algorithm',
    options.algorithm,
    Object.keys(ALGORITHMS) as AdaptiveAlgorithm[],
    'gradient2',
  )
  const { knobs, build } = ALGORITHMS[algorithm]
  for (const name of Object.keys(options)) {
    if (knobs.includes(name)) continue
    const owners = (Object.keys(ALGORITHMS) as AdaptiveAlgorithm[]).filter((other) =>
      ALGORITHMS[other].knobs.includes(name),
    )
    if (owners.length > 0) {
      throw new TypeError(
        `${factory}: option "${name}" is for algorithm ${owners.map((o) => `"${o}"`).join(' or ')}, not "${algorithm}"`,
      )
    }
  }
  const update = build(factory, options as never)

  const min = options.min === undefined ? 1 : readPositiveInteger(factory, 'min', options.min)
  const max =
    options.max === undefined
      ? Math.max(1000, min)
      : readPositiveInteger(factory, 'max', options.max)
  if (max < min) {
    throw new RangeError(`${factory}: "max" must be at least "min" (${min}), got ${max}`)
  }
  const initialRule = `an integer in [min, max] = [${min}, ${max}]`
  const initial =
    options.initial === undefined
      ? Math.min(max, Math.max(min, 20))
      : readInteger(factory, 'initial', options.initial, min, initialRule)
  if (initial > max) {
    throw new RangeError(`${factory}: "initial" must be ${initialRule}, got ${initial}`)
  }
  const maxQueue = readMaxQueue(factory, 'maxQueue', options.maxQueue)
  const probeConcurrency =
    options.probeConcurrency === undefined
      ? 3
      : readPositiveInteger(factory, 'probeConcurrency', options.probeConcurrency)
  const probeIntervalMs = readPositiveDuration(
    factory,
    'probeInterval',
    options.probeInterval,
    '30s',
  )
  // A probe every 30 s is the default, so a bare 30 is seconds meant; the update interval
  // (default 100 ms), like CoDel's target and interval, is normally milliseconds.
  warnIfBareMilliseconds(factory, 'probeInterval', options.probeInterval)
  return {
    name: readName(factory, 'name', options.name, 'adaptive-concurrency'),
    algorithm,
    clock: readClock(factory, 'clock', options.clock),
    update,
    initial,
    min,
    max,
    queue: readQueueSettings(factory, options, maxQueue),
    updateIntervalMs: readPositiveDuration(
      factory,
      'updateInterval',
      options.updateInterval,
      '100ms',
    ),
    probeIntervalMs,
    probeJitter: readNumber(
      factory,
      'probeJitter',
      options.probeJitter,
      0.15,
      (n) => n >= 0 && n <= 1,
      'a number in [0, 1]',
    ),
    probeLimit: Math.min(max, Math.max(min, probeConcurrency)),
    probeSamples:
      options.probeSamples === undefined
        ? 50
        : readPositiveInteger(factory, 'probeSamples', options.probeSamples),
    onLimitChange: readFunction(factory, 'onLimitChange', options.onLimitChange),
    random: readFunction(factory, 'random', options.random) ?? Math.random,
  }
}
