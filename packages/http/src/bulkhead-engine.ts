import type { Duration } from '@sluice/core'
import {
  readDuration,
  readNonNegativeInteger,
  readOptions,
  readPositiveDuration,
  readPositiveInteger,
} from '@sluice/core/validation'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import type { Decision } from './decision'
import {
  type CommonOptions,
  Engine,
  type LimitedBody,
  type Outcome,
  type Refusal,
  TEMPORARY_REDUCED_CAPACITY,
} from './engine'
import { type BulkheadEvent, bulkheadChannel } from './events'
import { createHeaderWriter, type HeaderMode, type HeaderWriter } from './headers'
import { GLOBAL_KEY, global, type KeyExtractor } from './keys'
import { isPromiseLike, type MaybePromise } from './maybe-promise'
import { claimPolicies, concurrencyPolicy, policyName } from './policy'
import { decision } from './rate-limit-engine'
import type { Lease, Policy, TakeResult } from './store'

/**
 * Options of `bulkhead()`, the same in every adapter.
 *
 * @example
 * ```ts
 * const options: BulkheadOptions = { max: 20, maxQueue: 50, queueTimeout: '2s' }
 * ```
 */
export interface BulkheadOptions<Req = unknown, Res = unknown> extends CommonOptions<Req, Res> {
  /** Requests handled at once (per key). Default 20. */
  max?: number
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
   * Answer a refusal as RFC 9457 `application/problem+json` with the rate-limit draft's
   * `temporary-reduced-capacity` type; a string `message` becomes its `detail`.
   */
  problemDetails?: boolean
}

const OPTION_NAMES = [
  'max',
  'maxQueue',
  'queueTimeout',
  'key',
  'statusCode',
  'headers',
  'message',
  'name',
  'retryAfter',
  'store',
  'clock',
  'problemDetails',
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
 * const engine = new BulkheadEngine({ max: 10 }, requestAccessors, responseAccessors)
 * const outcome = await engine.admit(req, res)
 * if (outcome.action === 'pass') res.once('close', () => outcome.done(false))
 * ```
 */
export class BulkheadEngine<Req = unknown, Res = unknown> extends Engine<Req, Res> {
  readonly policy: Policy
  readonly policies: readonly Policy[]
  readonly maxQueue: number
  readonly #headers: HeaderWriter | undefined
  readonly #queueMs: number
  readonly #retryAfterMs: number
  /** Slots this middleware holds in this process, over all keys. */
  #inFlight = 0
  /** Requests waiting in this middleware, over all keys. */
  #queued = 0

  constructor(
    options: BulkheadOptions<Req, Res>,
    request: RequestAccessors<Req>,
    response: ResponseAccessors<Req, Res>,
    factory = 'bulkhead',
    adapterOptions: readonly string[] = [],
  ) {
    readOptions(factory, options, [...OPTION_NAMES, ...adapterOptions], HINTS)
    super(factory, options, request, response, {
      status: 503,
      message: 'Service Unavailable',
      key: global(),
      problem: TEMPORARY_REDUCED_CAPACITY,
    })
    const max = options.max === undefined ? 20 : readPositiveInteger(factory, 'max', options.max)
    this.maxQueue =
      options.maxQueue === undefined
        ? 0
        : readNonNegativeInteger(factory, 'maxQueue', options.maxQueue)
    const name = options.name === undefined ? undefined : policyName(factory, 'name', options.name)
    this.policy = concurrencyPolicy(name, max)
    this.policies = [this.policy]
    claimPolicies(this.store, this.policies, factory)
    this.#queueMs =
      options.queueTimeout === undefined
        ? Number.POSITIVE_INFINITY
        : readDuration(factory, 'queueTimeout', options.queueTimeout)
    this.#retryAfterMs = readPositiveDuration(factory, 'retryAfter', options.retryAfter, '1s')
    this.#headers = createHeaderWriter(options.headers, this.policies, factory)
  }

  /**
   * Takes a slot for one request and prepares the answer. Never throws: a failing key
   * function or store rejects the returned promise. If the client goes away while queued,
   * the promise rejects with the abort reason and nothing is held.
   */
  admit(req: Req, res: Res): MaybePromise<Outcome> {
    try {
      const earlier = this.decidedBefore(req)
      if (earlier !== undefined)
        return new BulkheadOutcome(this, req, res, earlier, false, undefined, 0)
      const key = this.keyOf(req)
      if (isPromiseLike(key)) return Promise.resolve(key).then((k) => this.#enter(req, res, k))
      return this.#enter(req, res, key)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  #enter(req: Req, res: Res, key: string): MaybePromise<Outcome> {
    if (this.queue.has(key)) return this.#wait(req, res, key, undefined)
    const taken = this.store.take(key, this.policies, 1)
    if (isPromiseLike(taken))
      return Promise.resolve(taken).then((t) => this.#entered(req, res, key, t))
    return this.#entered(req, res, key, taken)
  }

  #entered(req: Req, res: Res, key: string, taken: TakeResult): MaybePromise<Outcome> {
    if (!taken.allowed && this.maxQueue > 0) return this.#wait(req, res, key, taken)
    return this.#decided(req, res, key, taken, undefined)
  }

  async #wait(req: Req, res: Res, key: string, first: TakeResult | undefined): Promise<Outcome> {
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
          taken ??= await this.store.take(key, this.policies, 1)
          if (taken.allowed) {
            const lease = taken.results[0]?.lease
            if (signal.aborted) {
              // The client left while the store answered: hand the slot straight back.
              if (lease !== undefined) await this.store.release(key, this.policy, lease)
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
        this.#queued--
        this.queue.leave(me)
      }
    }
  }

  /** The current state, for a request refused without taking (queue full, timed out). */
  async #current(key: string): Promise<TakeResult> {
    return { allowed: false, results: await this.store.get(key, this.policies) }
  }

  #decided(
    req: Req,
    res: Res,
    key: string,
    taken: TakeResult,
    waitedMs: number | undefined,
  ): Outcome {
    const decided = decision(taken, key, 1)
    this.remember(req, decided)
    this.#headers?.write(res, this.response, decided)
    const lease = taken.allowed ? taken.results[0]?.lease : undefined
    if (taken.allowed) {
      this.#inFlight++
      this.#publish(key, 'enter', waitedMs === undefined ? undefined : { waitedMs })
    } else {
      this.writeRetryAfter(res, this.#retryAfterMs, this.#retryAfterMs)
      this.#publish(key, 'reject')
    }
    return new BulkheadOutcome(this, req, res, decided, taken.allowed, lease, this.clock.now())
  }

  /** Frees a slot (once per outcome) and wakes the next request queued under its key. */
  release(key: string, lease: Lease | undefined, since: number): void {
    this.#inFlight--
    if (bulkheadChannel.hasSubscribers) {
      this.#publish(key, 'release', { heldMs: this.clock.now() - since })
    }
    if (lease === undefined) {
      this.queue.wake(key)
      return
    }
    const released = this.store.release(key, this.policy, lease)
    const handOn = () => this.queue.wake(key)
    if (isPromiseLike(released)) Promise.resolve(released).then(handOn, handOn)
    else handOn()
  }

  #publish(
    key: string,
    event: BulkheadEvent['event'],
    extra?: { waitedMs?: number; heldMs?: number },
  ): void {
    if (!bulkheadChannel.hasSubscribers) return
    bulkheadChannel.publish({
      key,
      policy: this.policy.name,
      event,
      inFlight: this.#inFlight,
      queued: this.#queued,
      ...extra,
    })
  }

  /** Requests waiting for a slot under `key` (default: the global key). */
  queued(key?: string): number {
    return this.queue.size(key ?? GLOBAL_KEY)
  }
}

class BulkheadOutcome<Req, Res> implements Outcome {
  readonly action: 'pass' | 'refuse'
  readonly status: number
  readonly holds: boolean
  #held: boolean

  constructor(
    private readonly engine: BulkheadEngine<Req, Res>,
    private readonly req: Req,
    private readonly res: Res,
    readonly decision: Decision,
    /** Whether this request took a slot (false for a refusal or a second pass). */
    held: boolean,
    private readonly lease: Lease | undefined,
    private readonly since: number,
  ) {
    this.action = decision.allowed ? 'pass' : 'refuse'
    this.status = engine.statusCode
    this.holds = held
    this.#held = held
  }

  refusal(): MaybePromise<Refusal> {
    return this.engine.refusalOf(this.req, this.res, this.decision)
  }

  done(): void {
    if (!this.#held) return
    this.#held = false
    this.engine.release(this.decision.key, this.lease, this.since)
  }
}
