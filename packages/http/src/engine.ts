import type { Clock } from '@sluice/core'
import { readBoolean, readClock, readFunction, typeError } from '@sluice/core/validation'
import { memoryStore } from '@sluice/keyed'
import type { Store } from '@sluice/keyed/store'
import {
  createdInsideRequest,
  emitWarning,
  isPromiseLike,
  type MaybePromise,
} from '@sluice/keyed/store'
import type { RequestAccessors, ResponseAccessors } from './accessors'
import type { Decision } from './decision'
import { retryAfterSeconds } from './headers'
import type { KeyExtractor } from './keys'
import { KeyNormalizer } from './request-key'
import { KeyedWaitQueue } from './wait-queue'

/** A response body: text, or an object sent as JSON. */
export type LimitedBody = string | Record<string, unknown>

/** A refusal's body as it goes on the wire. */
export interface Refusal {
  /** `text/plain; charset=utf-8`, `application/json` or `application/problem+json`. */
  readonly contentType: string
  readonly body: string
}

/** What the pipeline tells an adapter to do with a request. */
export type Action = 'pass' | 'refuse' | 'skip'

/**
 * The pipeline's answer for one request: pass it on, refuse it (status and body ready, all
 * headers including `Retry-After` already written through the response accessors), or
 * skip it (nothing was counted). An adapter only translates:
 *
 * - expose `decision` (as `req.rateLimit`, `ctx.state.rateLimit`, ...) when there is one;
 * - `pass`: call the next handler, and when `holds` is true arrange for `done(gone)` to be
 *   called once when the response is over (refund, bulkhead release);
 * - `refuse`: run the user's `onLimited`, or send `status` with `refusal()`'s body;
 * - `skip`: call the next handler.
 */
export interface Outcome {
  readonly action: Action
  /** What the handler sees; undefined when the request was skipped. */
  readonly decision: Decision | undefined
  /** The status of a refusal. */
  readonly status: number
  /** Whether `done` has anything to do: the adapter may skip watching the response. */
  readonly holds: boolean
  /** The body of a refusal: the `message` option (or problem details), serialized. */
  refusal(): MaybePromise<Refusal>
  /**
   * Call once when the response is over: `gone` is true when the client left before it
   * finished. Frees a bulkhead slot, and refunds permits when `refundWhen` says so (never
   * for a client that left). Safe to call more than once: only the first call counts.
   */
  done(gone: boolean): void
}

/** A request that passes with nothing to do after (skipped, or counted a second time). */
export const SKIPPED: Outcome = {
  action: 'skip',
  decision: undefined,
  status: 0,
  holds: false,
  refusal: () => ({ contentType: 'text/plain; charset=utf-8', body: '' }),
  done: () => {},
}

/** The options every engine reads the same way. */
export interface CommonOptions<Req, Res> {
  key?: KeyExtractor<Req>
  statusCode?: number
  message?: LimitedBody | ((req: Req, res: Res) => LimitedBody | Promise<LimitedBody>)
  problemDetails?: boolean
  store?: Store
  clock?: Clock
}

/** Checks that `store` has the Store methods. */
export function readStore(factory: string, store: unknown, clock: Clock): Store {
  if (store === undefined) return memoryStore({ clock })
  const s = store as Partial<Record<keyof Store, unknown>> | null
  const methods = ['take', 'refund', 'release', 'get', 'reset', 'resetAll'] as const
  if (typeof s !== 'object' || s === null || methods.some((m) => typeof s[m] !== 'function')) {
    throw typeError(factory, 'store', `must implement ${methods.join(', ')}`, store)
  }
  return s as Store
}

/** An HTTP status code for a refusal, 400–599. */
function readStatus(factory: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  const rule = 'must be an HTTP status code from 400 to 599'
  if (typeof value !== 'number') throw typeError(factory, 'statusCode', rule, value)
  if (!Number.isInteger(value) || value < 400 || value > 599) {
    throw new RangeError(`${factory}: "statusCode" ${rule}, got ${value}`)
  }
  return value
}

function readMessage(factory: string, value: unknown): void {
  if (typeof value === 'string' || typeof value === 'function') return
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return
  throw typeError(factory, 'message', 'must be a string, an object or a function', value)
}

const TEXT = 'text/plain; charset=utf-8'
const JSON_TYPE = 'application/json; charset=utf-8'
const PROBLEM = 'application/problem+json'

/** A problem type of draft-ietf-httpapi-ratelimit-headers ("Problem Types"), for `problemDetails`. */
export interface ProblemType {
  readonly type: string
  readonly title: string
  /** Whether the problem lists the refusing policies (`violated-policies`). */
  readonly listsPolicies: boolean
}

/** A request over a quota policy: what a rate limit refuses. */
export const QUOTA_EXCEEDED: ProblemType = {
  type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
  title: 'Request cannot be satisfied as assigned quota has been exceeded',
  listsPolicies: true,
}

/** A server without capacity for the request right now: what a full bulkhead refuses. */
export const TEMPORARY_REDUCED_CAPACITY: ProblemType = {
  type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
  title: 'Request cannot be satisfied due to temporarily reduced capacity',
  listsPolicies: false,
}

/**
 * What both engines share: the options every middleware takes (key, store, clock, status,
 * message, problem details), the per-key wait queue, key normalization with its warnings,
 * how a refusal's body is made, and the per-request mark that catches one middleware
 * mounted twice on a request's path.
 */
export abstract class Engine<Req, Res> {
  readonly factory: string
  readonly store: Store
  /** Status of a refusal. */
  readonly statusCode: number
  protected readonly request: RequestAccessors<Req>
  protected readonly response: ResponseAccessors<Req, Res>
  protected readonly clock: Clock
  protected readonly queue: KeyedWaitQueue
  protected readonly keys: KeyNormalizer
  readonly #key: KeyExtractor<Req>
  readonly #message: CommonOptions<Req, Res>['message']
  readonly #problem: ProblemType | undefined
  /** Set on a request this middleware has decided, to catch a second pass. */
  protected readonly mark = Symbol('sluice.decided')
  #doubleCountWarned = false

  constructor(
    factory: string,
    options: CommonOptions<Req, Res>,
    request: RequestAccessors<Req>,
    response: ResponseAccessors<Req, Res>,
    defaults: { status: number; message: string; key: KeyExtractor<Req>; problem: ProblemType },
  ) {
    this.factory = factory
    this.request = request
    this.response = response
    this.clock = readClock(factory, 'clock', options.clock)
    this.store = readStore(factory, options.store, this.clock)
    const key = readFunction(factory, 'key', options.key)
    this.#key = key ?? defaults.key
    this.keys = new KeyNormalizer(factory, key !== undefined)
    this.statusCode = readStatus(factory, options.statusCode, defaults.status)
    this.#message = options.message ?? defaults.message
    readMessage(factory, this.#message)
    const problemDetails = readBoolean(factory, 'problemDetails', options.problemDetails, false)
    this.#problem = problemDetails ? defaults.problem : undefined
    this.queue = new KeyedWaitQueue(this.clock)
    if (createdInsideRequest()) {
      emitWarning(
        factory,
        'ERR_SLUICE_CREATED_IN_REQUEST',
        'a limiter was created while a request was being handled: a new limiter for every request starts with a full budget and limits nothing. Create it once, when the app starts, and reuse it.',
      )
    }
  }

  /** The key of a request, normalized (fallback, long keys hashed). */
  protected keyOf(req: Req): MaybePromise<string> {
    const raw = this.#key(req, this.request)
    if (typeof raw !== 'string' && isPromiseLike(raw)) {
      return Promise.resolve(raw).then((k) => this.keys.normalize(k))
    }
    return this.keys.normalize(raw)
  }

  /**
   * The decision this middleware already made for `req`, when it is mounted twice on the
   * request's path (`app.use(limiter)` and again on a router): reported once; the second
   * pass reuses the first decision instead of counting the request again.
   */
  protected decidedBefore(req: Req): Decision | undefined {
    const slot = (this.request.slot?.(req) ?? req) as Record<symbol, Decision | undefined>
    const earlier = slot[this.mark]
    if (earlier !== undefined && !this.#doubleCountWarned) {
      this.#doubleCountWarned = true
      emitWarning(
        this.factory,
        'ERR_SLUICE_DOUBLE_COUNT',
        'the same middleware ran twice for one request (mounted on the app and again on a router?); the second pass was not counted. Mount it once.',
      )
    }
    return earlier
  }

  protected remember(req: Req, decision: Decision): void {
    const slot = (this.request.slot?.(req) ?? req) as Record<symbol, Decision>
    slot[this.mark] = decision
  }

  /** Writes `Retry-After` for a refusal: whole seconds, rounded up (RFC 9110 §10.2.3). */
  protected writeRetryAfter(res: Res, ms: number, fallbackMs: number): void {
    this.response.setHeader(res, 'Retry-After', String(retryAfterSeconds(ms, fallbackMs)))
  }

  /** The body of a refusal: the `message` option, or RFC 9457 problem details. */
  refusalOf(req: Req, res: Res, decision: Decision): MaybePromise<Refusal> {
    if (this.#problem !== undefined) {
      return problemDetails(this.#problem, this.statusCode, decision, this.#message)
    }
    const message = this.#message!
    if (typeof message !== 'function') return serialize(this.factory, message)
    const made = message(req, res)
    if (isPromiseLike(made)) return Promise.resolve(made).then((m) => serialize(this.factory, m))
    return serialize(this.factory, made)
  }
}

function serialize(factory: string, body: unknown): Refusal {
  if (typeof body === 'string') return { contentType: TEXT, body }
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    return { contentType: JSON_TYPE, body: JSON.stringify(body) }
  }
  // Koa would turn a null body into 204, Express an array into a JSON list: say so instead.
  throw typeError(factory, 'message', 'must return a string or an object', body)
}

/**
 * A refusal as RFC 9457 problem details, with a problem type of the rate-limit draft and,
 * for `quota-exceeded`, its `violated-policies` extension member (the refusing policies);
 * for a bulkhead with priorities, a `partition` member (the partition that refused).
 */
function problemDetails(
  kind: ProblemType,
  status: number,
  decision: Decision,
  message: unknown,
): Refusal {
  const problem: Record<string, unknown> = { type: kind.type, title: kind.title, status }
  if (kind.listsPolicies) {
    problem['violated-policies'] = decision.results
      .filter((r) => !r.allowed)
      .map((r) => r.policy.name)
  }
  // A bulkhead with priorities names the partition that refused (an extension member).
  if (decision.partition !== undefined) problem.partition = decision.partition
  if (typeof message === 'string') problem.detail = message
  return { contentType: PROBLEM, body: JSON.stringify(problem) }
}
