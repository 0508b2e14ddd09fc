import { type Clock, type Duration, parseDuration } from '@sluice/core'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import type { Decision } from './decision'
import { createHeaderWriter, type HeaderMode, type HeaderWriter, toSeconds } from './headers'
import { FALLBACK_KEY, GLOBAL_KEY, global, type KeyExtractor } from './keys'
import { isPromiseLike } from './maybe-promise'
import { memoryStore } from './memory-store'
import { concurrencyPolicy, policyName } from './policy'
import {
  checkClock,
  checkMessage,
  checkOptionNames,
  checkStore,
  decision,
  type LimitedBody,
} from './rate-limit-engine'
import type { Lease, MaybePromise, Policy, Store, TakeResult } from './store'
import {
  describe,
  nonNegativeInteger,
  optionalFunction,
  optionsObject,
  positiveInteger,
  rangeError,
  statusCode,
} from './validate'

/**
 * Options of `bulkhead()`, the same in every adapter.
 *
 * @example
 * ```ts
 * const options: BulkheadOptions = { max: 20, maxQueue: 50, queueTimeout: '2s' }
 * ```
 */
export interface BulkheadOptions<Req = unknown, Res = unknown> {
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
  /** Policy name in headers and in the store. Default `'bulkhead'`. */
  name?: string
  /** `Retry-After` of a refusal: a bulkhead cannot know when a slot frees. Default `'1s'`. */
  retryAfter?: Duration
  /** Where slots are counted. Default `memoryStore({ clock })`. */
  store?: Store
  /** Time source for `queueTimeout`. Default `systemClock`. */
  clock?: Clock
}

const OPTION_NAMES = new Set([
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
])

/** A bulkhead decision: admitted requests hold a slot until `release()`. */
export interface BulkheadDecision extends Decision {
  /** Frees the slot. Safe to call any number of times: only the first call counts. */
  readonly release: () => void
}

interface Waiter {
  wake: (() => void) | undefined
  /** A wake-up that came while the waiter was busy asking the store: not lost, just early. */
  woken: boolean
}

function notify(waiter: Waiter | undefined): void {
  if (waiter === undefined) return
  if (waiter.wake === undefined) waiter.woken = true
  else waiter.wake()
}

const NOTHING_HELD = () => {}

/**
 * The framework-neutral bulkhead an adapter wraps: a request takes a concurrency slot
 * (per key) before its handler runs and gives it back exactly once through the returned
 * decision's `release`. Full bulkheads queue up to `maxQueue` requests, FIFO; a queued
 * request whose client goes away leaves the queue at once.
 *
 * Queued requests are woken by releases in this process (and by their timeout). With a
 * shared store, a slot freed by another process is noticed at the next local release.
 *
 * @example
 * ```ts
 * const engine = new BulkheadEngine({ max: 10 }, requestAccessors, responseAccessors)
 * const entered = await engine.enter(req, res)
 * if (entered.allowed) res.once('close', entered.release)
 * ```
 */
export class BulkheadEngine<Req = unknown, Res = unknown> {
  readonly policy: Policy
  readonly policies: readonly Policy[]
  readonly store: Store
  readonly statusCode: number
  readonly maxQueue: number
  readonly #request: RequestAccessors<Req>
  readonly #response: ResponseAccessors<Req, Res>
  readonly #key: KeyExtractor<Req>
  readonly #headers: HeaderWriter | undefined
  readonly #message: BulkheadOptions<Req, Res>['message']
  readonly #queueMs: number
  readonly #retryAfter: string
  readonly #clock: Clock
  readonly #queues = new Map<string, Waiter[]>()
  readonly #factory: string

  constructor(
    options: BulkheadOptions<Req, Res>,
    request: RequestAccessors<Req>,
    response: ResponseAccessors<Req, Res>,
    factory = 'bulkhead',
    adapterOptions: readonly string[] = [],
  ) {
    optionsObject(factory, options)
    checkOptionNames(factory, options, OPTION_NAMES, adapterOptions)
    this.#factory = factory
    this.#request = request
    this.#response = response
    const max = positiveInteger(factory, 'max', options.max ?? 20)
    this.maxQueue = nonNegativeInteger(factory, 'maxQueue', options.maxQueue ?? 0)
    const name = policyName(factory, 'name', options.name ?? 'bulkhead')
    this.policy = concurrencyPolicy(name, max)
    this.policies = [this.policy]
    this.#clock = checkClock(factory, options.clock)
    this.#queueMs =
      options.queueTimeout === undefined
        ? Number.POSITIVE_INFINITY
        : parseDuration(options.queueTimeout, `${factory}: "queueTimeout"`)
    const retryAfterMs = parseDuration(options.retryAfter ?? '1s', `${factory}: "retryAfter"`)
    if (retryAfterMs === 0) {
      throw rangeError(factory, 'retryAfter', 'must be a positive duration', options.retryAfter)
    }
    this.#retryAfter = String(toSeconds(retryAfterMs))
    this.store =
      options.store === undefined
        ? memoryStore({ clock: this.#clock })
        : checkStore(factory, options.store)
    this.#key = optionalFunction(factory, 'key', options.key) ?? global()
    this.#headers = createHeaderWriter(options.headers ?? 'draft-8', this.policies, factory)
    this.statusCode = statusCode(factory, 'statusCode', options.statusCode ?? 503)
    this.#message = options.message ?? 'Service Unavailable'
    checkMessage(factory, this.#message)
  }

  /**
   * Takes a slot for one request. The decision's `release` must be called when the
   * response is done (it is a no-op for a refused request). If the client goes away
   * while queued, the promise rejects with the abort reason and nothing is held.
   */
  enter(req: Req, res: Res): MaybePromise<BulkheadDecision> {
    const key = this.#key(req, this.#request)
    if (isPromiseLike(key)) return key.then((k) => this.#enterKey(req, res, k))
    return this.#enterKey(req, res, key)
  }

  #enterKey(req: Req, res: Res, rawKey: string | undefined): MaybePromise<BulkheadDecision> {
    const key = rawKey === undefined || rawKey === '' ? FALLBACK_KEY : rawKey
    if (typeof key !== 'string') {
      throw new TypeError(
        `${this.#factory}: "key" must return a string or undefined, got ${describe(key)}`,
      )
    }
    if (this.#queues.has(key)) return this.#wait(req, res, key)
    const taken = this.store.take(key, this.policies, 1)
    if (isPromiseLike(taken)) return taken.then((t) => this.#entered(req, res, key, t))
    return this.#entered(req, res, key, taken)
  }

  #entered(req: Req, res: Res, key: string, taken: TakeResult): MaybePromise<BulkheadDecision> {
    if (!taken.allowed && this.maxQueue > 0) return this.#wait(req, res, key)
    return this.#decision(key, taken)
  }

  #decision(key: string, taken: TakeResult): BulkheadDecision {
    const base = decision(taken, key, 1)
    const lease = taken.results[0]?.lease
    return { ...base, release: lease === undefined ? NOTHING_HELD : this.#releaser(key, lease) }
  }

  /** A release function that frees the lease exactly once, then hands the slot on. */
  #releaser(key: string, lease: Lease): () => void {
    let held = true
    return () => {
      if (!held) return
      held = false
      const released = this.store.release(key, this.policy, lease)
      const handOn = () => notify(this.#queues.get(key)?.[0])
      if (isPromiseLike(released)) released.then(handOn, handOn)
      else handOn()
    }
  }

  async #wait(req: Req, res: Res, key: string): Promise<BulkheadDecision> {
    let queue = this.#queues.get(key)
    if ((queue?.length ?? 0) >= this.maxQueue) {
      return this.#decision(key, {
        allowed: false,
        results: await this.store.get(key, this.policies),
      })
    }
    if (queue === undefined) {
      queue = []
      this.#queues.set(key, queue)
    }
    const deadline = this.#clock.now() + this.#queueMs
    const me: Waiter = { wake: undefined, woken: false }
    queue.push(me)
    const signal = this.#response.signal(req, res)
    try {
      for (;;) {
        if (queue[0] === me) {
          const taken = await this.store.take(key, this.policies, 1)
          if (taken.allowed) {
            if (signal.aborted) {
              // The client left while the store answered: hand the slot straight back.
              this.#releaser(key, taken.results[0]!.lease!)()
              throw signal.reason
            }
            return this.#decision(key, taken)
          }
        }
        if (!(await this.#signalled(me, deadline, signal))) {
          return this.#decision(key, {
            allowed: false,
            results: await this.store.get(key, this.policies),
          })
        }
      }
    } finally {
      const index = queue.indexOf(me)
      queue.splice(index, 1)
      if (queue.length === 0) this.#queues.delete(key)
      else if (index === 0) notify(queue[0])
    }
  }

  /** Waits for a wake-up (a slot freed, or the head left): false when the deadline came first. */
  async #signalled(me: Waiter, deadline: number, signal: AbortSignal): Promise<boolean> {
    if (me.woken) {
      me.woken = false
      return true
    }
    const timer = new AbortController()
    const woken = new Promise<boolean>((resolve) => {
      me.wake = () => resolve(true)
    })
    const waitMs = deadline - this.#clock.now()
    const timeout =
      waitMs === Number.POSITIVE_INFINITY
        ? abortable(AbortSignal.any([signal, timer.signal]))
        : this.#clock
            .sleep(Math.max(0, waitMs), AbortSignal.any([signal, timer.signal]))
            .then(() => false)
    try {
      return await Promise.race([woken, timeout])
    } finally {
      me.wake = undefined
      timer.abort()
      timeout.catch(() => {})
    }
  }

  /** Sets the configured RateLimit headers for a decision. */
  writeHeaders(res: Res, decided: Decision): void {
    this.#headers?.write(res, this.#response, decided)
  }

  /** The `Retry-After` value of a refusal (the `retryAfter` option, in seconds). */
  retryAfter(): string {
    return this.#retryAfter
  }

  /** The body of a refusal. */
  message(req: Req, res: Res): MaybePromise<LimitedBody> {
    const message = this.#message!
    return typeof message === 'function' ? message(req, res) : message
  }

  /** Requests waiting for a slot under `key` (default: the global key). */
  queued(key?: string): number {
    return this.#queues.get(key ?? GLOBAL_KEY)?.length ?? 0
  }
}

/** A promise that only ever rejects, when `signal` aborts: an unbounded wait. */
function abortable(signal: AbortSignal): Promise<boolean> {
  return new Promise<boolean>((_, reject) => {
    if (signal.aborted) reject(signal.reason)
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
}
