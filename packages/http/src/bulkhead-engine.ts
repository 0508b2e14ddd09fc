import type {
  AdaptiveConcurrencyLimiter,
  AdaptivePermit,
  Duration,
  Partitions,
  PermitOutcome,
  Priority,
  QueuePolicy,
  ReconfigureOptions,
} from '@sluice/core'
import { RateLimitError } from '@sluice/core'
import {
  PRIORITY_OPTIONS,
  partitionName,
  type QueueSettings,
  readCarry,
  readPriority,
  readQueueSettings,
  SlotQueue,
} from '@sluice/core/internal'
import {
  readDuration,
  readFunction,
  readNonNegativeInteger,
  readOptions,
  readPositiveDuration,
  readPositiveInteger,
  typeError,
} from '@sluice/core/validation'
import type { Policy, PolicyResult, TakeResult } from '@sluice/keyed/store'
import {
  adaptiveChannel,
  andThen,
  type BulkheadEvent,
  bulkheadChannel,
  checkCarries,
  claimPolicies,
  concurrencyPolicy,
  isPromiseLike,
  type MaybePromise,
  policyName,
  warnIfBareMilliseconds,
} from '@sluice/keyed/store'
import type { BulkheadInfo, Decision } from './decision'
import {
  type CommonOptions,
  clientGone,
  Engine,
  type EngineInit,
  type FollowedResponse,
  type LimitedBody,
  type Outcome,
  type Refusal,
  TEMPORARY_REDUCED_CAPACITY,
} from './engine'
import { createHeaderWriter, type HeaderMode, type HeaderWriter } from './headers'
import { type Held, HoldTimer } from './hold-timer'
import { GLOBAL_KEY, global, type KeyExtractor } from './keys'
import { decision } from './rate-limit-engine'

/**
 * Options of `bulkhead()`, the same in every adapter.
 *
 * @example
 * ```ts
 * const options: BulkheadOptions = { max: 20, maxQueue: 50, queueTimeout: '2s' }
 * ```
 */
export interface BulkheadOptions<Req = unknown, Res = unknown> extends CommonOptions<Req, Res> {
  /**
   * Requests handled at once (per key). Default 20. Or an `adaptiveConcurrency()` limiter,
   * whose limit follows the latency of the requests it admits: one per process, so it
   * takes no `store` and no `key`.
   */
  max?: number | AdaptiveConcurrencyLimiter
  /** Requests that may wait (per key) for a slot. Default 0: refuse when full. */
  maxQueue?: number
  /** The longest a request waits in the queue. Default: as long as its client stays. */
  queueTimeout?: Duration
  /** Separate bulkheads per key (e.g. per tenant). Default: one for all requests. */
  key?: KeyExtractor<Req>
  /** Status of a refusal. Default 503. */
  statusCode?: number
  /** Which RateLimit headers to send. Default `'draft-8'`. */
  headers?: HeaderMode
  /** Body of a refusal. Default `'Service Unavailable'`. */
  message?: LimitedBody | ((req: Req, res: Res) => LimitedBody | Promise<LimitedBody>)
  /** Policy name in headers and in the store. Default: made from `max`, e.g. `'20-concurrent'`. */
  name?: string
  /** `Retry-After` of a refusal: a bulkhead cannot know when a slot frees. Default `'1s'`. */
  retryAfter?: Duration
  /**
   * The longest a request may hold its slot, from the moment it took it. Past it the
   * handler's `signal` aborts, the response is destroyed (the client sees the connection
   * close) and the slot is freed: a client that never reads its response cannot keep a
   * slot. Default `'1m'`, the shared stores' `leaseTtl`; `false` for no bound (long
   * streams such as server-sent events).
   */
  holdTimeout?: Duration | false
  /**
   * Answer a refusal as RFC 9457 `application/problem+json` with the rate-limit draft's
   * `temporary-reduced-capacity` type; a string `message` becomes its `detail`.
   */
  problemDetails?: boolean
  /**
   * How important a request is: `'critical'`, `'default'`, `'sheddable'` or any number
   * (higher is more important). Under overload the lowest is refused first: waiters are
   * served by priority, a full queue refuses its lowest waiter to make room for a higher
   * newcomer, and a request may wait, even with `maxQueue` 0, for the slot of
   * lower-priority work in flight. Each refusal names its partition (the request's
   * priority) in the `sluice:bulkhead` event, the problem details and the headers' policy
   * name (`"20-concurrent/sheddable"`). Default: none, every request alike.
   */
  priority?: (req: Req) => Priority | Promise<Priority>
  /**
   * Guaranteed shares of `max` by priority, e.g. `{ critical: 0.5 }`: a share nobody uses
   * is lent to the others, and once its owner waits the next slot released is its.
   * Needs `priority`.
   */
  partitions?: Partitions
  /**
   * How the queue sheds once waiting stops helping: `'fifo'` (default), `'codel'` or
   * `'adaptive-lifo'` (see `concurrency()`). CoDel's 5 ms target suits handlers of tens
   * of milliseconds; slower ones wait longer than that for any slot.
   */
  queuePolicy?: QueuePolicy
  /** `'codel'` and `'adaptive-lifo'`: the queueing delay to keep below. Default `'5ms'`. */
  queueTarget?: Duration
  /** `'codel'` and `'adaptive-lifo'`: how long a queue must stand to count as overloaded. Default `'100ms'`. */
  queueInterval?: Duration
}

const OPTION_NAMES = [
  'max',
  'maxQueue',
  'queueTimeout',
  'headers',
  'name',
  'retryAfter',
  'holdTimeout',
  'priority',
  ...PRIORITY_OPTIONS,
]

const HINTS: Readonly<Record<string, string>> = {
  limit: 'use "max": a bulkhead counts requests in flight, not per window',
  concurrency: 'use "max"',
  maxConcurrent: 'use "max"',
  timeout: 'use "queueTimeout"',
}

/**
 * The framework-neutral bulkhead an adapter wraps: a request takes a concurrency slot
 * (per key) before its handler runs and gives it back exactly once through the outcome's
 * `done`. Full bulkheads queue up to `maxQueue` requests, FIFO; a queued request whose
 * client goes away leaves the queue at once.
 *
 * Queued requests are woken by releases in this process (and by their timeout). With a
 * shared store, a slot freed by another process is noticed at the next local release.
 *
 * @example
 * ```ts
 * const engine = new BulkheadEngine({ options: { max: 10 }, request, response })
 * const outcome = await engine.admit(req, res)
 * // respond() of @sluice/http/node or /fetch calls these as the request goes on:
 * outcome.workDone(false)
 * outcome.done(false)
 * ```
 */
export class BulkheadEngine<Req = unknown, Res = unknown> extends Engine<Req, Res> {
  readonly maxQueue: number
  /** The adaptive limiter given as `max`, if any: it counts the slots instead of the store. */
  readonly adaptive: AdaptiveConcurrencyLimiter | undefined
  #policy: Policy
  #policies: readonly Policy[]
  #headers: HeaderWriter | undefined
  readonly #headerMode: HeaderMode | undefined
  readonly #queueMs: number
  readonly #retryAfterMs: number
  /** Slots this middleware holds in this process, over all keys. */
  #inFlight = 0
  /** Requests waiting in this middleware, over all keys. */
  #queued = 0
  readonly #priority: BulkheadOptions<Req, Res>['priority']
  /** With priorities (or a shedding queue): how the queues of `#slots` behave. */
  readonly #queueSettings: QueueSettings | undefined
  /** With priorities: the slots and waiters of this process, per key. */
  readonly #slots = new Map<string, SlotQueue>()
  /** With priorities: the header writers that name a refusing partition, by partition. */
  readonly #partitionHeaders = new Map<string, HeaderWriter | undefined>()

  /** Expires slots held past `holdTimeout`; undefined with `holdTimeout: false`. */
  readonly #holds: HoldTimer | undefined

  constructor(init: EngineInit<BulkheadOptions<Req, Res>, Req, Res>) {
    super(init, {
      factory: 'bulkhead',
      names: OPTION_NAMES,
      hints: HINTS,
      status: 503,
      message: 'Service Unavailable',
      key: global(),
      problem: TEMPORARY_REDUCED_CAPACITY,
    })
    const { factory } = this
    const options = this.given as BulkheadOptions<Req, Res>
    if (options.holdTimeout !== false) {
      warnIfBareMilliseconds(factory, 'holdTimeout', options.holdTimeout)
    }
    this.#holds =
      options.holdTimeout === false
        ? undefined
        : new HoldTimer(
            this.clock,
            readPositiveDuration(factory, 'holdTimeout', options.holdTimeout, '1m'),
          )
    this.maxQueue =
      options.maxQueue === undefined
        ? 0
        : readNonNegativeInteger(factory, 'maxQueue', options.maxQueue)
    const name = options.name === undefined ? undefined : policyName(factory, 'name', options.name)
    this.adaptive = readAdaptive(factory, options)
    const max =
      this.adaptive !== undefined
        ? this.adaptive.limit
        : options.max === undefined
          ? 20
          : readPositiveInteger(factory, 'max', options.max)
    this.#policy = this.#livePolicy(name, max)
    this.#policies = [this.#policy]
    if (this.adaptive === undefined) claimPolicies(this.store, this.#policies, factory)
    warnIfBareMilliseconds(factory, 'queueTimeout', options.queueTimeout)
    this.#queueMs =
      options.queueTimeout === undefined
        ? Number.POSITIVE_INFINITY
        : readDuration(factory, 'queueTimeout', options.queueTimeout)
    warnIfBareMilliseconds(factory, 'retryAfter', options.retryAfter)
    this.#retryAfterMs = readPositiveDuration(factory, 'retryAfter', options.retryAfter, '1s')
    this.#headerMode = options.headers
    this.#headers = createHeaderWriter(options.headers, this.#policies, factory)
    this.#priority = readFunction(factory, 'priority', options.priority)
    this.#queueSettings = readPriorityOptions(factory, options, this.maxQueue)
    // The limit moves: the headers' quota follows it, and the move is published.
    this.adaptive?.subscribe((change) => {
      this.#policy = this.#livePolicy(name, change.limit)
      this.#policies = [this.#policy]
      this.#headers = createHeaderWriter(this.#headerMode, this.#policies, factory)
      this.#partitionHeaders.clear()
      this.queue.wake(GLOBAL_KEY)
      this.#slots.get(GLOBAL_KEY)?.drain()
      if (adaptiveChannel.hasSubscribers) {
        adaptiveChannel.publish({
          limiter: this.adaptive!.name,
          algorithm: change.algorithm,
          limit: change.limit,
          previous: change.previous,
        })
      }
    })
  }

  /**
   * Changes `max` while running (`name` may be given as it is). Raising it serves queued
   * requests at once; lowering it below the slots held refuses newcomers (they queue, as
   * when full) until enough are released, and never revokes a held slot. `carry` is
   * checked, as every `reconfigure` does, though slots have nothing to carry. Refused, the
   * old `max` left working: an adaptive bulkhead (its limiter moves the limit), a bad
   * `max`, another option.
   *
   * @example
   * ```ts
   * pool.reconfigure({ max: 40 })
   * ```
   */
  reconfigure(options: { max: number; name?: string }, how?: ReconfigureOptions): void {
    const method = `${this.factory}.reconfigure`
    readCarry(method, how)
    if (this.adaptive === undefined) checkCarries(this.store, method)
    const given = readOptions(method, options, ['max', 'name'], {
      ...HINTS,
      maxQueue: 'only "max" changes in reconfigure: build a new middleware for the rest',
    }) as { max?: unknown; name?: unknown }
    if (this.adaptive !== undefined) {
      throw new TypeError(
        `${method}: an adaptive bulkhead's limit is moved by its limiter, not reconfigured`,
      )
    }
    if (given.name !== undefined && given.name !== this.#policy.name) {
      throw typeError(method, 'name', `cannot change (it is "${this.#policy.name}")`, given.name)
    }
    if (given.max === undefined) throw typeError(method, 'max', 'is required', undefined)
    const max = readPositiveInteger(method, 'max', given.max)
    const policy = concurrencyPolicy(this.#policy.name, max)
    claimPolicies(this.store, [policy], method)
    this.#policy = policy
    this.#policies = [policy]
    this.#headers = createHeaderWriter(this.#headerMode, this.#policies, this.factory)
    this.#partitionHeaders.clear()
    this.queue.wakeAll()
    for (const slots of this.#slots.values()) slots.drain()
  }

  /** The bulkhead's concurrency policy (for an adaptive one, at its current limit). */
  get policy(): Policy {
    return this.#policy
  }

  get policies(): readonly Policy[] {
    return this.#policies
  }

  /**
   * An adaptive bulkhead keeps the name the first limit gave it (`'adaptive'` unless
   * named), so headers and events do not change name as the limit moves.
   */
  #livePolicy(name: string | undefined, max: number): Policy {
    const adaptiveName = this.adaptive === undefined ? name : (name ?? 'adaptive-concurrent')
    return concurrencyPolicy(adaptiveName, max)
  }

  /**
   * Takes a slot for one request and prepares the answer. Never throws: a failing key
   * function or store rejects the returned promise. If the client goes away while queued,
   * the promise rejects with the abort reason and nothing is held.
   */
  admit(req: Req, res: Res): MaybePromise<Outcome> {
    try {
      const earlier = this.decidedBefore(req)
      if (earlier !== undefined) return new BulkheadOutcome(this, req, res, earlier, undefined, 0)
      const key = this.keyOf(req)
      if (isPromiseLike(key)) return Promise.resolve(key).then((k) => this.#enter(req, res, k))
      return this.#enter(req, res, key)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  #enter(req: Req, res: Res, key: string): MaybePromise<Outcome> {
    if (this.#queueSettings !== undefined) {
      const priority = this.#priority?.(req)
      if (isPromiseLike(priority)) {
        return Promise.resolve(priority).then((p) => this.#enterAt(req, res, key, p))
      }
      return this.#enterAt(req, res, key, priority)
    }
    if (this.queue.has(key)) return this.#wait(req, res, key, undefined)
    const taken = this.#take(key)
    if (isPromiseLike(taken))
      return Promise.resolve(taken).then((t) => this.#entered(req, res, key, t))
    return this.#entered(req, res, key, taken)
  }

  #entered(req: Req, res: Res, key: string, taken: Taken): MaybePromise<Outcome> {
    if (!taken.allowed && this.maxQueue > 0) return this.#wait(req, res, key, taken)
    return this.#decided(req, res, key, taken, undefined)
  }

  async #wait(req: Req, res: Res, key: string, first: Taken | undefined): Promise<Outcome> {
    const me = this.queue.join(key, this.maxQueue)
    if (me === undefined) {
      return this.#decided(req, res, key, first ?? (await this.#current(key)), undefined)
    }
    const since = this.clock.now()
    const deadline = since + this.#queueMs
    this.#queued++
    this.#publish(key, 'queue')
    const signal = this.response.signal(req, res)
    let joined = true
    try {
      let taken = first
      for (;;) {
        if (this.queue.isHead(me)) {
          taken ??= await this.#take(key)
          if (taken.allowed) {
            if (signal.aborted) {
              // The client left while the store answered: hand the slot straight back.
              await this.#give(key, taken, ABORTED)
              throw signal.reason
            }
            this.#queued--
            joined = false
            this.queue.leave(me)
            return this.#decided(req, res, key, taken, this.clock.now() - since)
          }
          taken = undefined
        }
        const left = deadline - this.clock.now()
        if (left <= 0) {
          this.#queued--
          joined = false
          this.queue.leave(me)
          this.#publish(key, 'timeout', { waitedMs: this.clock.now() - since })
          return this.#decided(req, res, key, await this.#current(key), undefined)
        }
        await this.queue.sleep(me, left, signal)
      }
    } finally {
      if (joined) {
        // Still queued, so the client left (or the store failed) while it waited.
        this.#queued--
        this.queue.leave(me)
        this.#publish(key, 'cancel', { waitedMs: this.clock.now() - since })
      }
    }
  }

  /** Takes one slot: from the adaptive limiter, or from the store. */
  #take(key: string): MaybePromise<Taken> {
    const adaptive = this.adaptive
    if (adaptive === undefined) return this.store.take(key, this.#policies, 1)
    const permit = adaptive.tryEnter()
    return {
      allowed: permit !== undefined,
      results: [this.#adaptiveResult(permit !== undefined)],
      permit,
    }
  }

  #adaptiveResult(allowed: boolean): PolicyResult {
    const { limit, inFlight } = this.adaptive!
    return {
      policy: this.#policy,
      allowed,
      limit,
      remaining: Math.max(0, limit - inFlight),
      resetMs: 0,
      retryAfterMs: 0,
    }
  }

  /**
   * With priorities: a request takes a slot of this process's queue for its key, by
   * priority, then the store's (or the adaptive limiter's), which may still refuse when
   * other processes hold the rest.
   */
  #enterAt(req: Req, res: Res, key: string, given: unknown): MaybePromise<Outcome> {
    const priority = readPriority(this.factory, given)
    const partition = partitionName(priority)
    const slots = this.#slotsOf(key)
    if (slots.tryTake(1, priority)) return this.#takeStore(req, res, key, priority, undefined)
    const signal = this.response.signal(req, res)
    signal.throwIfAborted()
    const joined = slots.join(1, priority, this.#queueMs, signal)
    if (joined instanceof RateLimitError) {
      this.#forget(key, slots)
      return this.#refuseAt(req, res, key, partition)
    }
    return this.#waitAt(req, res, key, priority, joined, signal)
  }

  async #waitAt(
    req: Req,
    res: Res,
    key: string,
    priority: number,
    joined: Promise<void>,
    signal: AbortSignal,
  ): Promise<Outcome> {
    const partition = partitionName(priority)
    const since = this.clock.now()
    this.#queued++
    this.#publish(key, 'queue', { partition })
    try {
      await joined
    } catch (error) {
      this.#queued--
      const waitedMs = this.clock.now() - since
      if (signal.aborted || !(error instanceof RateLimitError)) {
        this.#publish(key, 'cancel', { waitedMs, partition })
        throw error
      }
      // Timed out, dropped by the queue policy, or displaced by a higher priority.
      if (error.code === 'ERR_SLUICE_TIMEOUT') {
        this.#publish(key, 'timeout', { waitedMs, partition })
      }
      return this.#refuseAt(req, res, key, partition)
    }
    this.#queued--
    return this.#takeStore(req, res, key, priority, this.clock.now() - since, signal)
  }

  /** The local slot is held: the store (or adaptive limiter) has the last word. */
  #takeStore(
    req: Req,
    res: Res,
    key: string,
    priority: number,
    waitedMs: number | undefined,
    signal?: AbortSignal,
  ): MaybePromise<Outcome> {
    const settle = (taken: Taken): MaybePromise<Outcome> => {
      if (!taken.allowed) {
        this.#freeSlot(key, priority)
      } else if (signal?.aborted) {
        // The client left while the store answered: hand the slot straight back.
        const given = this.#give(key, taken, ABORTED)
        const gone = () => {
          this.#freeSlot(key, priority)
          throw signal.reason
        }
        return andThen(given, gone)
      }
      const partition = partitionName(priority)
      return this.#decided(req, res, key, { ...taken, priority }, waitedMs, partition)
    }
    let taken: MaybePromise<Taken>
    try {
      taken = this.#take(key)
    } catch (error) {
      this.#freeSlot(key, priority)
      throw error
    }
    if (!isPromiseLike(taken)) return settle(taken)
    return Promise.resolve(taken).then(settle, (error: unknown) => {
      this.#freeSlot(key, priority)
      throw error
    })
  }

  /** A refusal by the local queue: the store's current state, with the refusing partition. */
  #refuseAt(req: Req, res: Res, key: string, partition: string): MaybePromise<Outcome> {
    const refuse = (results: readonly PolicyResult[]) =>
      this.#decided(req, res, key, { allowed: false, results }, undefined, partition)
    if (this.adaptive !== undefined) return refuse([this.#adaptiveResult(false)])
    const results = this.store.get(key, this.#policies)
    return andThen(results, refuse)
  }

  #slotsOf(key: string): SlotQueue {
    let slots = this.#slots.get(key)
    if (slots === undefined) {
      const adaptive = this.adaptive
      slots = new SlotQueue(
        this.#policy.name,
        adaptive === undefined ? () => this.#policy.limit : () => adaptive.limit,
        this.clock,
        this.#queueSettings as QueueSettings,
      )
      this.#slots.set(key, slots)
    }
    return slots
  }

  #freeSlot(key: string, priority: number): void {
    const slots = this.#slots.get(key) as SlotQueue
    slots.release(1, priority)
    this.#forget(key, slots)
  }

  /** Drops an idle key's queue: keys are as many as clients, and an idle one holds nothing. */
  #forget(key: string, slots: SlotQueue): void {
    if (slots.inFlight === 0 && slots.queued === 0) this.#slots.delete(key)
  }

  /** Gives a slot back: the permit records its latency, or a drop, or nothing (aborted). */
  #give(key: string, taken: Taken, outcome: PermitOutcome | undefined): MaybePromise<void> {
    if (taken.permit !== undefined) {
      taken.permit.release(outcome)
      return
    }
    const lease = taken.results[0]?.lease
    if (lease !== undefined) return this.store.release(key, this.#policy, lease)
  }

  /** The current state, for a request refused without taking (queue full, timed out). */
  async #current(key: string): Promise<TakeResult> {
    if (this.adaptive !== undefined)
      return { allowed: false, results: [this.#adaptiveResult(false)] }
    return { allowed: false, results: await this.store.get(key, this.#policies) }
  }

  #decided(
    req: Req,
    res: Res,
    key: string,
    taken: Taken,
    waitedMs: number | undefined,
    partition?: string,
  ): Outcome {
    const plain = decision(taken, key, 1)
    const decided = partition === undefined ? plain : { ...plain, partition }
    this.remember(req, decided)
    const headers =
      partition === undefined || taken.allowed ? this.#headers : this.#refusalHeaders(partition)
    headers?.write(res, this.response, decided)
    if (taken.allowed) {
      this.#inFlight++
      this.#publish(key, 'enter', {
        ...(waitedMs === undefined ? {} : { waitedMs }),
        ...(partition === undefined ? {} : { partition }),
      })
    } else {
      this.writeRetryAfter(res, this.#retryAfterMs, this.#retryAfterMs)
      this.#publish(key, 'reject', partition === undefined ? undefined : { partition })
    }
    return new BulkheadOutcome(
      this,
      req,
      res,
      decided,
      taken.allowed ? taken : undefined,
      this.clock.now(),
    )
  }

  /** The headers of a refusal by one partition: the policy named `<name>/<partition>`. */
  #refusalHeaders(partition: string): HeaderWriter | undefined {
    if (this.#partitionHeaders.has(partition)) return this.#partitionHeaders.get(partition)
    const named = { ...this.#policy, name: `${this.#policy.name}/${partition}` }
    const writer = createHeaderWriter(this.#headerMode, [named], this.factory)
    this.#partitionHeaders.set(partition, writer)
    return writer
  }

  /** Starts the `holdTimeout` of a slot just taken, or stops it once the slot is freed. */
  hold(held: Held, holding: boolean): void {
    if (holding) this.#holds?.add(held)
    else this.#holds?.remove(held)
  }

  /**
   * Frees a slot (once per outcome) and wakes the next request queued under its key. For
   * an adaptive limiter a 503/504 counts as a dropped request, and a client that left as
   * an aborted one: no latency sample (it would make the downstream look fast). Returns
   * the store's release while it is under way.
   */
  release(
    key: string,
    taken: Taken,
    since: number,
    res: Res,
    gone: boolean,
  ): Promise<void> | undefined {
    this.#inFlight--
    if (bulkheadChannel.hasSubscribers) {
      const partition =
        taken.priority === undefined ? {} : { partition: partitionName(taken.priority) }
      this.#publish(key, 'release', { heldMs: this.clock.now() - since, ...partition })
    }
    let outcome: PermitOutcome | undefined
    if (taken.permit !== undefined) {
      const status = gone ? undefined : this.response.status?.(res)
      outcome = gone ? ABORTED : status === 503 || status === 504 ? DROPPED : undefined
    }
    const released = this.#give(key, taken, outcome)
    const { priority } = taken
    const handOn =
      priority === undefined ? () => this.queue.wake(key) : () => this.#freeSlot(key, priority)
    if (isPromiseLike(released)) return Promise.resolve(released).then(handOn, handOn)
    handOn()
    return undefined
  }

  #publish(
    key: string,
    event: BulkheadEvent['event'],
    extra?: { waitedMs?: number; heldMs?: number; partition?: string },
  ): void {
    if (!bulkheadChannel.hasSubscribers) return
    bulkheadChannel.publish({
      key,
      policy: this.#policy.name,
      event,
      inFlight: this.#inFlight,
      queued: this.#queued,
      ...extra,
    })
  }

  /** Requests waiting for a slot under `key` (default: the global key). */
  queued(key?: string): number {
    const k = key ?? GLOBAL_KEY
    return this.#queueSettings === undefined
      ? this.queue.size(k)
      : (this.#slots.get(k)?.queued ?? 0)
  }
}

/**
 * One request's pass through the bulkhead, and, once admitted, its slot: what the handler
 * is given as `BulkheadInfo`, and what holds the slot until both the work and the
 * response are over (or `holdTimeout` passes).
 */
class BulkheadOutcome<Req, Res> implements Outcome, BulkheadInfo, Held {
  readonly action: 'pass' | 'refuse'
  readonly status: number
  readonly holds: boolean
  readonly info: BulkheadInfo | undefined
  deadline = 0
  previous: Held | undefined
  next: Held | undefined
  #held: Taken | undefined
  #response: FollowedResponse | undefined
  /** Undefined until the response is over; then whether it never finished. */
  #gone: boolean | undefined
  #workOver = false
  /** Why the work is no longer wanted, once it is not; the signal is made on first use. */
  #stop: unknown
  #controller: AbortController | undefined

  constructor(
    private readonly engine: BulkheadEngine<Req, Res>,
    private readonly req: Req,
    private readonly res: Res,
    readonly decision: Decision,
    /** What this request took (undefined for a refusal or a second pass). */
    held: Taken | undefined,
    private readonly since: number,
  ) {
    this.action = decision.allowed ? 'pass' : 'refuse'
    this.status = engine.statusCode
    this.holds = held !== undefined
    this.info = held === undefined ? undefined : this
    this.#held = held
    if (held !== undefined) engine.hold(this, true)
  }

  get exposes(): 'bulkhead' {
    return 'bulkhead'
  }

  get onLimited(): ((...args: never[]) => unknown) | undefined {
    return this.engine.onLimited
  }

  get key(): string {
    return this.decision.key
  }

  get policy(): string {
    return this.decision.policy
  }

  get limit(): number {
    return this.decision.limit
  }

  get remaining(): number {
    return this.decision.remaining
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#stop !== undefined) this.#controller.abort(this.#stop)
    }
    return this.#controller.signal
  }

  refusal(): MaybePromise<Refusal> {
    return this.engine.refusalOf(this.req, this.res, this.decision)
  }

  follow(response: FollowedResponse): void {
    this.#response = response
  }

  done(gone: boolean): void {
    if (this.#gone !== undefined) return
    this.#gone = gone
    if (gone) this.#abort(clientGone())
    if (this.#workOver) this.#release(gone)
  }

  workDone(failed: boolean): void {
    if (this.#workOver) return
    this.#workOver = true
    // A failed handler's answer is the error handler's: nothing it does needs the slot.
    if (this.#gone !== undefined) this.#release(this.#gone)
    else if (failed) this.#release(false)
  }

  /** `holdTimeout` passed: the work is cut short, its response destroyed, its slot freed. */
  expire(): void {
    this.#abort(
      new DOMException('sluice: the bulkhead slot was held past holdTimeout', 'TimeoutError'),
    )
    this.#response?.destroy()
    this.#release(true)
  }

  #abort(reason: unknown): void {
    if (this.#stop !== undefined) return
    this.#stop = reason
    this.#controller?.abort(reason)
  }

  #release(gone: boolean): void {
    const held = this.#held
    if (held === undefined) return
    this.#held = undefined
    this.engine.hold(this, false)
    const releasing = this.engine.release(this.decision.key, held, this.since, this.res, gone)
    if (releasing !== undefined) this.#response?.waitUntil?.(releasing)
  }
}

/**
 * A store's answer, or an adaptive limiter's, with the permit it granted and, with
 * priorities, the priority whose local slot it holds.
 */
type Taken = TakeResult & {
  readonly permit?: AdaptivePermit | undefined
  readonly priority?: number | undefined
}

const ABORTED: PermitOutcome = { aborted: true }
const DROPPED: PermitOutcome = { dropped: true }

/**
 * The priority options, checked, when any is given: then requests go through the
 * engine's own queues by priority. `partitions` without `priority` would guarantee
 * shares to requests that never ask for them.
 */
function readPriorityOptions(
  factory: string,
  options: BulkheadOptions<never, never>,
  maxQueue: number,
): QueueSettings | undefined {
  const given = ['priority', ...PRIORITY_OPTIONS] as const
  if (given.every((option) => options[option] === undefined)) return undefined
  if (options.partitions !== undefined && options.priority === undefined) {
    throw new TypeError(
      `${factory}: "partitions" needs "priority", the function that gives each request's priority`,
    )
  }
  return readQueueSettings(factory, options, maxQueue)
}

/** `max` as an adaptive limiter, checked against the options it cannot be combined with. */
function readAdaptive(
  factory: string,
  options: BulkheadOptions<never, never>,
): AdaptiveConcurrencyLimiter | undefined {
  const { max } = options
  if (typeof max !== 'object' || max === null) return undefined
  const limiter = max as Partial<AdaptiveConcurrencyLimiter>
  if (typeof limiter.tryEnter !== 'function' || typeof limiter.subscribe !== 'function') {
    throw typeError(
      factory,
      'max',
      'must be a positive integer or an adaptiveConcurrency() limiter',
      max,
    )
  }
  // Adaptive limits are this process's view of its downstream: nothing to share or key.
  for (const option of ['store', 'key'] as const) {
    if (options[option] !== undefined) {
      throw typeError(
        factory,
        option,
        'cannot be combined with an adaptive max (adaptive limits are per process)',
        options[option],
      )
    }
  }
  return max as AdaptiveConcurrencyLimiter
}
