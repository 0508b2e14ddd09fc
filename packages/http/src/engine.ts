import type { Clock } from '@sluice/core'
import {
  readBoolean,
  readClock,
  readFunction,
  readOptions,
  typeError,
} from '@sluice/core/validation'
import { memoryStore } from '@sluice/keyed'
import type { Store } from '@sluice/keyed/store'
import {
  createdInsideRequest,
  emitWarning,
  isPromiseLike,
  type MaybePromise,
} from '@sluice/keyed/store'
import type { ProxySetup, RequestAccessors, ResponseAccessors } from './accessors'
import type { BulkheadInfo, Decision, RateLimitInfo } from './decision'
import { retryAfterSeconds } from './headers'
import type { KeyExtractor } from './keys'
import { ProxyChecks } from './proxy-checks'
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
 * What an outcome may do to the response it follows (see {@link Outcome.follow}): a Node
 * `ServerResponse` is one as it is.
 */
export interface FollowedResponse {
  /** Ends the response at once: its bulkhead slot's `holdTimeout` passed. */
  destroy(): void
  /**
   * Keeps a store call made once the response is over alive: on Workers, the execution
   * context's `waitUntil` (without it workerd drops the call with the request).
   */
  waitUntil?(work: Promise<unknown>): void
}

/**
 * The pipeline's answer for one request, as `engine.admit()` hands it over: pass it on,
 * refuse it (status and body ready, every header including `Retry-After` already written
 * through the response accessors), or skip it (nothing was counted). An adapter gives it
 * to `respond` (`@sluice/http/node` or `@sluice/http/fetch`), which carries it out; the
 * methods below are what `respond` calls.
 */
export interface Outcome {
  readonly action: Action
  /** What was decided; undefined when the request was skipped. */
  readonly decision: Decision | undefined
  /** The status of a refusal. */
  readonly status: number
  /** Whether the response must be followed (`follow`, `done`, `workDone`). */
  readonly holds: boolean
  /** Under which name the handler is given `info`. */
  readonly exposes: 'rateLimit' | 'bulkhead'
  /** What the handler is given; undefined when there is nothing new to give. */
  readonly info: RateLimitInfo | BulkheadInfo | undefined
  /** The user's `onLimited`, called through the adapter's `limited` accessor. */
  readonly onLimited: ((...args: never[]) => unknown) | undefined
  /** The body of a refusal: the `message` option (or problem details), serialized. */
  refusal(): MaybePromise<Refusal>
  /** The response this outcome follows, before the handler runs. */
  follow(response: FollowedResponse): void
  /**
   * Call once when the response is over: `gone` is true when it never finished (the
   * client left, or the response was destroyed). Refunds permits when `refundWhen` says so
   * (never for a response that did not finish); frees a bulkhead slot once the work is
   * over too. Only the first call counts.
   */
  done(gone: boolean): void
  /**
   * Call once when the admitted work is over: the handler's promise settled (`failed`:
   * it rejected), or it ended the response. A bulkhead slot is held until both this and
   * `done` came, or at once after a failure, whose answer is the error handler's.
   */
  workDone(failed: boolean): void
}

const nothing = () => {}

/** A request that passes with nothing to do after (skipped). */
export const SKIPPED: Outcome = {
  action: 'skip',
  decision: undefined,
  status: 0,
  holds: false,
  exposes: 'rateLimit',
  info: undefined,
  onLimited: undefined,
  refusal: () => ({ contentType: 'text/plain; charset=utf-8', body: '' }),
  follow: nothing,
  done: nothing,
  workDone: nothing,
}

/**
 * The options every engine reads the same way. Two more are typed by each adapter, whose
 * frameworks call them differently: `onLimited`, which every engine takes (it answers a
 * refusal; `respond` calls it through the adapter's `limited` accessor), and `validate`
 * (the one-time checks of {@link ProxySetup}), which `rateLimit` takes, and a bulkhead
 * where its adapter lists it (a key by client address can find none).
 */
export interface CommonOptions<Req, Res> {
  key?: KeyExtractor<Req>
  statusCode?: number
  message?: LimitedBody | ((req: Req, res: Res) => LimitedBody | Promise<LimitedBody>)
  problemDetails?: boolean
  store?: Store
  clock?: Clock
}

/**
 * How an adapter builds an engine: the user's options and the adapter's accessors.
 *
 * @example
 * ```ts
 * const engine = new RateLimitEngine({ options, request: expressRequest, response: expressResponse })
 * ```
 */
export interface EngineInit<Options, Req, Res> {
  /** The options the user gave (read as own properties only). Default `{}`. */
  readonly options?: Options | undefined
  readonly request: RequestAccessors<Req>
  readonly response: ResponseAccessors<Req, Res>
  /** Names the middleware in errors and warnings. Default `'rateLimit'` or `'bulkhead'`. */
  readonly factory?: string
  /** Options the adapter reads itself, accepted besides the shared ones (Hono's `getIp`). */
  readonly adapterOptions?: readonly string[]
}

/** What each engine tells the base about itself. */
interface EngineKind<Req> {
  readonly factory: string
  readonly names: readonly string[]
  readonly hints: Readonly<Record<string, string>>
  readonly status: number
  readonly message: string
  readonly key: KeyExtractor<Req>
  readonly problem: ProblemType
}

const COMMON_OPTIONS = [
  'key',
  'statusCode',
  'message',
  'problemDetails',
  'store',
  'clock',
  'onLimited',
]

/**
 * The options as own properties, refusing what cannot be options: a request or a context
 * (the factory handed to the framework uncalled, `app.use(rateLimit)`), or a function
 * (`@RateLimit` without its call).
 */
function readGiven(
  factory: string,
  given: unknown,
  names: readonly string[],
  hints: Readonly<Record<string, string>>,
): Record<string, unknown> {
  if (given === undefined) return Object.create(null) as Record<string, unknown>
  const proto = typeof given === 'object' && given !== null ? Object.getPrototypeOf(given) : null
  const plain = proto === null || Object.getPrototypeOf(proto) === null
  if (typeof given === 'function' || !plain) {
    const kind =
      typeof given === 'function'
        ? 'a function'
        : `an object of another kind (${String(proto.constructor?.name ?? 'unnamed')})`
    throw new TypeError(
      `${factory}: options must be a plain object, got ${kind}: was ${factory} handed over without being called? Write ${factory}({ ... }).`,
    )
  }
  return readOptions(factory, given as Record<string, unknown>, names, hints)
}

/** Why a request's wait, or its handler's signal, was cut short: its client went away. */
export function clientGone(): Error {
  const error = new Error('sluice: the client disconnected before its response was over')
  error.name = 'AbortError'
  return error
}

/** A user callback that threw, named by its option, the original kept as `cause`. */
export function callbackFailed(factory: string, option: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error)
  return new Error(`${factory}: the "${option}" function failed: ${message}`, { cause: error })
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
 * message, problem details, onLimited, validate), the per-key wait queue, key
 * normalization with its warnings, the one-time proxy checks, how a refusal's body is
 * made, and the per-request mark that catches one middleware mounted twice on a request's
 * path.
 */
export abstract class Engine<Req, Res> {
  readonly factory: string
  readonly store: Store
  /** Status of a refusal. */
  readonly statusCode: number
  /** The user's `onLimited`, if any. */
  readonly onLimited: ((...args: never[]) => unknown) | undefined
  /** The options as given, own properties only. */
  protected readonly given: Record<string, unknown>
  protected readonly request: RequestAccessors<Req>
  protected readonly response: ResponseAccessors<Req, Res>
  protected readonly clock: Clock
  protected readonly queue: KeyedWaitQueue
  protected readonly keys: KeyNormalizer
  protected readonly proxy: ProxyChecks<Req>
  readonly #key: KeyExtractor<Req>
  readonly #message: CommonOptions<Req, Res>['message']
  readonly #problem: ProblemType | undefined
  /** Set on a request this middleware has decided, to catch a second pass. */
  protected readonly mark = Symbol('sluice.decided')
  #doubleCountWarned = false

  constructor(init: EngineInit<unknown, Req, Res>, kind: EngineKind<Req>) {
    const factory = init.factory ?? kind.factory
    this.factory = factory
    const names = [...COMMON_OPTIONS, ...kind.names, ...(init.adapterOptions ?? [])]
    const options = readGiven(factory, init.options, names, kind.hints)
    this.given = options
    this.response = init.response
    this.proxy = new ProxyChecks(factory, options.validate, init.request.proxy)
    this.request = this.proxy.watchesAddress ? this.#watchingAddress(init.request) : init.request
    this.clock = readClock(factory, 'clock', options.clock)
    this.store = readStore(factory, options.store, this.clock)
    const key = readFunction(factory, 'key', options.key as KeyExtractor<Req> | undefined)
    this.#key = key ?? kind.key
    this.keys = new KeyNormalizer(factory, key !== undefined)
    this.statusCode = readStatus(factory, options.statusCode, kind.status)
    this.#message = (options.message ?? kind.message) as CommonOptions<Req, Res>['message']
    readMessage(factory, this.#message)
    const problemDetails = readBoolean(factory, 'problemDetails', options.problemDetails, false)
    this.#problem = problemDetails ? kind.problem : undefined
    this.onLimited = readFunction(
      factory,
      'onLimited',
      options.onLimited as ((...args: never[]) => unknown) | undefined,
    )
    this.queue = new KeyedWaitQueue(this.clock)
    if (createdInsideRequest()) {
      emitWarning(
        factory,
        'ERR_SLUICE_CREATED_IN_REQUEST',
        'a limiter was created while a request was being handled: a new limiter for every request starts with a full budget and limits nothing. Create it once, when the app starts, and reuse it.',
      )
    }
  }

  /** The request accessors with a client address that is reported, once, when missing. */
  #watchingAddress(request: RequestAccessors<Req>): RequestAccessors<Req> {
    return {
      ...request,
      ip: (req) => {
        const address = request.ip(req)
        if (address === undefined) this.proxy.noAddress()
        return address
      },
    }
  }

  /** The key of a request, normalized (fallback, long keys hashed). */
  protected keyOf(req: Req): MaybePromise<string> {
    let raw: ReturnType<KeyExtractor<Req>>
    try {
      raw = this.#key(req, this.request)
    } catch (error) {
      throw callbackFailed(this.factory, 'key', error)
    }
    if (typeof raw !== 'string' && isPromiseLike(raw)) {
      return Promise.resolve(raw).then(
        (k) => this.keys.normalize(k),
        (error: unknown) => {
          throw callbackFailed(this.factory, 'key', error)
        },
      )
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
