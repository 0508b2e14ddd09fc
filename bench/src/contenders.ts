import { createRequire } from 'node:module'
import {
  type Clock,
  concurrency,
  fixedWindow,
  type Limiter,
  leakyBucket,
  slidingWindow,
  systemClock,
  tokenBucket,
  warmUpTokenBucket,
} from '@sluice/core'
import { memoryStore, type Policy, type RateAlgorithm, type TakeResult } from '@sluice/http'
import {
  BulkheadEngine,
  type Outcome,
  RateLimitEngine,
  type RequestAccessors,
  type ResponseAccessors,
} from '@sluice/http/adapter'
import { type KeyedResult, keyedLimiter, type TakeBuffer } from '@sluice/keyed'
import { compilePolicy, concurrencyPolicy, rateLimitChannel } from '@sluice/keyed/store'
import { type ClientRateLimitInfo, MemoryStore as ExpressMemoryStore } from 'express-rate-limit'
import {
  type ClientRateLimitInfo as HonoClientInfo,
  MemoryStore as HonoMemoryStore,
} from 'hono-rate-limiter'
import { RateLimiter as LimiterRateLimiter, TokenBucket as LimiterTokenBucket } from 'limiter'
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'
import { HOT_RATE, KEYED_RATE, PACED_RATE, type Shape } from './config'
import { inlineGcra, inlineGcraScalar } from './floor'

/** A limit: `limit` permits per `windowMs`. */
export interface Rate {
  readonly limit: number
  readonly windowMs: number
}

/** What a contender is built with. */
export interface BuildOptions {
  /** Clients expected: the sluice memory store's `maxKeys` unless `maxKeys` is given. */
  readonly keys: number
  /** The sluice memory store's `maxKeys`, when it holds fewer keys than come (churn). */
  readonly maxKeys?: number
  /** Time source of sluice limiters (peers read the global clocks). Default `systemClock`. */
  readonly clock?: Clock
}

/** One live limiter under test. `call` is what is timed; `admitted` reads its answer. */
export interface Instance<R = unknown> {
  call(key: string): R | Promise<R>
  admitted(result: R): boolean
  /** Whether a rejected promise from `call` is the library's way of saying "refused". */
  refusal?(error: unknown): boolean
}

export type { Shape } from './config'

/** Who a contender stands for: the floor, sluice, or a peer library. */
export type Side = 'floor' | 'sluice' | 'peer'

/** A limiter configuration measured in the decision-cost, memory and exactness sections. */
export interface Contender {
  readonly id: string
  readonly label: string
  /** What the limiter is, without how it is called: for tables of outcomes. */
  readonly short: string
  readonly side: Side
  /** The npm package measured, for the versions table. */
  readonly pkg: string
  readonly shapes: readonly Shape[]
  /** For sluice: the algorithm, to pick its configuration and to group the report. */
  readonly algorithm?: RateAlgorithm | 'concurrency'
  /** Extra Node flags of the contender's child process. */
  readonly execArgv?: readonly string[]
  create(rate: Rate, options: BuildOptions): Instance
}

function define<R>(
  contender: Omit<Contender, 'create'> & {
    create(rate: Rate, options: BuildOptions): Instance<R>
  },
): Contender {
  return contender as Contender
}

const identity = (allowed: boolean): boolean => allowed
const takeAllowed = (taken: TakeResult): boolean => taken.allowed
const consumed = (result: KeyedResult): boolean => result.allowed
const withinLimit =
  (limit: number) =>
  (info: { totalHits: number }): boolean =>
    info.totalHits <= limit

/** The five time-based sluice algorithms, as direct limiters. */
const DIRECT: Record<RateAlgorithm, (rate: Rate, clock: Clock) => Limiter> = {
  'token-bucket': (rate, clock) => tokenBucket({ limit: rate.limit, window: rate.windowMs, clock }),
  'leaky-bucket': (rate, clock) => leakyBucket({ limit: rate.limit, window: rate.windowMs, clock }),
  'sliding-window': (rate, clock) =>
    slidingWindow({ limit: rate.limit, window: rate.windowMs, clock }),
  'fixed-window': (rate, clock) => fixedWindow({ limit: rate.limit, window: rate.windowMs, clock }),
  'warm-up': (rate, clock) =>
    warmUpTokenBucket({ limit: rate.limit, window: rate.windowMs, warmUp: WARM_UP_MS, clock }),
}

/**
 * The warm-up limiter's ramp, short so that the limiters measured are warm (the state
 * a long-running service is in) and the exactness run sees the end of the ramp.
 */
export const WARM_UP_MS = 1000

export const SLUICE_ALGORITHMS = Object.keys(DIRECT) as RateAlgorithm[]

function sluiceContenders(algorithm: RateAlgorithm): Contender[] {
  const create = DIRECT[algorithm]
  return [
    define<boolean>({
      id: `sluice/${algorithm}`,
      label: `sluice ${algorithm} · tryAcquire`,
      short: `sluice ${algorithm}`,
      side: 'sluice',
      pkg: '@sluice/core',
      shapes: ['hot'],
      algorithm,
      create(rate, options) {
        const limiter = create(rate, options.clock ?? systemClock)
        return { call: () => limiter.tryAcquire(), admitted: identity }
      },
    }),
    define<boolean>({
      id: `sluice/${algorithm}@map`,
      label: `sluice ${algorithm} · Map of limiters`,
      short: `sluice ${algorithm}`,
      side: 'sluice',
      pkg: '@sluice/core',
      shapes: ['keyed'],
      algorithm,
      create(rate, options) {
        const clock = options.clock ?? systemClock
        const limiters = new Map<string, Limiter>()
        return {
          call(key) {
            let limiter = limiters.get(key)
            if (limiter === undefined) {
              limiter = create(rate, clock)
              limiters.set(key, limiter)
            }
            return limiter.tryAcquire()
          },
          admitted: identity,
        }
      },
    }),
    define<TakeResult>({
      id: `sluice/${algorithm}@store`,
      label: `sluice ${algorithm} · memoryStore.take`,
      short: `sluice ${algorithm} (memory store)`,
      side: 'sluice',
      pkg: '@sluice/http',
      shapes: ['hot', 'keyed', 'churn', 'insert'],
      algorithm,
      create(rate, options) {
        const policies = [
          compilePolicy(
            {
              algorithm,
              limit: rate.limit,
              window: rate.windowMs,
              ...(algorithm === 'warm-up' ? { warmUp: WARM_UP_MS } : {}),
            },
            'bench',
          ),
        ]
        // Sized to the clients, as a deployment would be: no evictions (they would measure
        // the LRU's churn, not the limiter), and no slots preallocated for clients that never come.
        const store = memoryStore({
          maxKeys: options.maxKeys ?? options.keys,
          clock: options.clock ?? systemClock,
        })
        // One result the caller owns, filled by every decision (the Store contract allows
        // it): what an engine that reads the answer before the next call would pass.
        const into: TakeBuffer = { allowed: false, results: [] }
        return { call: (key) => store.take(key, policies, 1, into), admitted: takeAllowed }
      },
    }),
    define<KeyedResult>({
      id: `sluice/${algorithm}@consume`,
      label: `sluice ${algorithm} · keyedLimiter.consume`,
      short: `sluice ${algorithm} (keyed limiter)`,
      side: 'sluice',
      pkg: '@sluice/keyed',
      shapes: ['hot', 'keyed'],
      algorithm,
      create(rate, options) {
        const store = memoryStore({
          maxKeys: options.maxKeys ?? options.keys,
          clock: options.clock ?? systemClock,
        })
        const limiter = keyedLimiter({
          algorithm,
          limit: rate.limit,
          window: rate.windowMs,
          ...(algorithm === 'warm-up' ? { warmUp: WARM_UP_MS } : {}),
          store,
        })
        return { call: (key) => limiter.consume(key) as KeyedResult, admitted: consumed }
      },
    }),
  ]
}

/**
 * The smallest request an engine can read: the client address is all the default key
 * (`keys.ip()`) asks for. A fresh one per decision, as every request is a fresh object.
 */
interface FakeRequest {
  readonly ip: string
}

/**
 * The smallest response: a field for each header sluice writes by default (any other in
 * a map made when one is written), so the fake costs what a field write does.
 */
class FakeResponse {
  rateLimit: string | undefined = undefined
  rateLimitPolicy: string | undefined = undefined
  others: Map<string, string> | undefined = undefined
}

const fakeRequest: RequestAccessors<FakeRequest> = {
  ip: (req) => req.ip,
  method: () => 'GET',
  path: () => '/',
  route: () => undefined,
  header: () => undefined,
}

const fakeResponse: ResponseAccessors<FakeRequest, FakeResponse> = {
  getHeader: (res, name) =>
    name === 'RateLimit'
      ? res.rateLimit
      : name === 'RateLimit-Policy'
        ? res.rateLimitPolicy
        : res.others?.get(name),
  setHeader: (res, name, value) => {
    if (name === 'RateLimit') res.rateLimit = value
    else if (name === 'RateLimit-Policy') res.rateLimitPolicy = value
    else {
      res.others ??= new Map()
      res.others.set(name, value)
    }
  },
  signal: () => new AbortController().signal,
}

const passed = (outcome: Outcome): boolean => outcome.action === 'pass'

/**
 * What an adapter runs per request, without the framework: `RateLimitEngine.admit` with
 * the default options (sliding window, `keys.ip()`, draft-8 headers written through the
 * response accessors), on a fresh fake request and response each time. `twin` is the same
 * again in a process of its own: how far two identical processes differ (JIT decisions,
 * memory layout), the noise any comparison between processes carries.
 */
function engineContender(variant: 'real' | 'twin'): Contender {
  return define<Outcome>({
    id: `sluice/sliding-window@engine${variant === 'real' ? '' : '-twin'}`,
    label:
      variant === 'twin'
        ? 'sluice · RateLimitEngine.admit + headers (a second process, the same)'
        : 'sluice · RateLimitEngine.admit + headers',
    short: 'sluice rate-limit engine',
    side: 'sluice',
    pkg: '@sluice/http',
    shapes: variant === 'real' ? ['hot', 'keyed', 'churn', 'insert'] : ['hot'],
    create(rate, options) {
      const clock = options.clock ?? systemClock
      const engine = new RateLimitEngine<FakeRequest, FakeResponse>({
        options: {
          limit: rate.limit,
          window: rate.windowMs,
          store: memoryStore({ maxKeys: options.maxKeys ?? options.keys, clock }),
          clock,
        },
        request: fakeRequest,
        response: fakeResponse,
      })
      return {
        call: (ip) => engine.admit({ ip }, new FakeResponse()) as Outcome,
        admitted: passed,
      }
    },
  })
}

/** A bulkhead's slot taken and given back on a key with nothing else in flight. */
const BULKHEAD_CONTENDERS: readonly Contender[] = [
  define<boolean>({
    id: 'sluice/concurrency@store',
    label: 'sluice bulkhead · memoryStore.take + release (idle key)',
    short: 'sluice bulkhead (memory store)',
    side: 'sluice',
    pkg: '@sluice/http',
    shapes: ['hot'],
    algorithm: 'concurrency',
    create(_rate, options) {
      const store = memoryStore({ maxKeys: options.keys, clock: options.clock ?? systemClock })
      const policies: readonly Policy[] = [concurrencyPolicy(undefined, 20)]
      return {
        call(key) {
          const taken = store.take(key, policies, 1)
          const lease = taken.results[0]!.lease
          if (lease !== undefined) store.release(key, policies[0]!, lease)
          return taken.allowed
        },
        admitted: identity,
      }
    },
  }),
  define<boolean>({
    id: 'sluice/concurrency@store-held',
    label: 'sluice bulkhead · memoryStore.take + release (one slot held throughout)',
    short: 'sluice bulkhead (memory store, busy key)',
    side: 'sluice',
    pkg: '@sluice/http',
    shapes: ['hot'],
    algorithm: 'concurrency',
    create(_rate, options) {
      const store = memoryStore({ maxKeys: options.keys, clock: options.clock ?? systemClock })
      const policies: readonly Policy[] = [concurrencyPolicy(undefined, 20)]
      const busy = new Set<string>()
      return {
        call(key) {
          if (!busy.has(key)) {
            busy.add(key)
            store.take(key, policies, 1)
          }
          const taken = store.take(key, policies, 1)
          const lease = taken.results[0]!.lease
          if (lease !== undefined) store.release(key, policies[0]!, lease)
          return taken.allowed
        },
        admitted: identity,
      }
    },
  }),
  define<boolean>({
    id: 'sluice/concurrency@engine',
    label: 'sluice bulkhead · BulkheadEngine.admit + done (idle key)',
    short: 'sluice bulkhead engine',
    side: 'sluice',
    pkg: '@sluice/http',
    shapes: ['hot'],
    algorithm: 'concurrency',
    create(_rate, options) {
      const clock = options.clock ?? systemClock
      const engine = new BulkheadEngine<FakeRequest, FakeResponse>({
        options: { store: memoryStore({ maxKeys: options.keys, clock }), clock },
        request: fakeRequest,
        response: fakeResponse,
      })
      return {
        call(ip) {
          const outcome = engine.admit({ ip }, new FakeResponse()) as Outcome
          outcome.workDone(false)
          outcome.done(false)
          return outcome.action === 'pass'
        },
        admitted: identity,
      }
    },
  }),
]

const require = createRequire(import.meta.url)

interface KoaMemoryEntry {
  readonly remaining: number
}
type KoaMemoryLimiter = new (options: {
  id: string
  db: Map<string, unknown>
  max: number
  duration: number
}) => { get(): Promise<KoaMemoryEntry> }

/**
 * koa-ratelimit's memory driver, loaded afresh: it reads `Date.now()` and
 * `process.hrtime()` once at load time as its time base, so under fake timers it must be
 * loaded after they are installed.
 */
function loadKoaMemoryLimiter(): KoaMemoryLimiter {
  const path = require.resolve('koa-ratelimit/limiter/memory.js')
  delete require.cache[path]
  return require(path) as KoaMemoryLimiter
}

/**
 * Everything measured, in report order: the floor, the six sluice algorithms (direct,
 * keyed through a Map, keyed through the memory store), then each peer's fastest
 * in-memory path as its own middleware uses it.
 */
export const CONTENDERS: readonly Contender[] = [
  define<boolean>({
    id: 'floor/gcra-map',
    label: 'floor: inline GCRA on Map<string, number>',
    short: 'floor: inline GCRA',
    side: 'floor',
    pkg: '(inline)',
    shapes: ['hot', 'keyed', 'churn', 'insert'],
    create(rate) {
      const decide = inlineGcra(rate.limit, rate.windowMs)
      return { call: decide, admitted: identity }
    },
  }),
  define<boolean>({
    id: 'floor/gcra-scalar',
    label: 'floor: inline GCRA on one object field',
    short: 'floor: inline GCRA (one field)',
    side: 'floor',
    pkg: '(inline)',
    shapes: ['hot'],
    create(rate) {
      const decide = inlineGcraScalar(rate.limit, rate.windowMs)
      return { call: () => decide(), admitted: identity }
    },
  }),
  ...SLUICE_ALGORITHMS.flatMap(sluiceContenders),
  engineContender('real'),
  engineContender('twin'),
  define<boolean>({
    id: 'sluice/events@unsubscribed',
    label: 'sluice · the event check of one decision, nobody subscribed',
    short: 'sluice event check',
    side: 'sluice',
    pkg: '@sluice/http',
    shapes: ['hot'],
    create() {
      // What RateLimitEngine does for events per decision while nobody listens.
      return { call: () => !rateLimitChannel.hasSubscribers, admitted: identity }
    },
  }),
  ...BULKHEAD_CONTENDERS,
  define<boolean>({
    id: 'sluice/concurrency',
    label: 'sluice concurrency · tryAcquire + release',
    short: 'sluice concurrency',
    side: 'sluice',
    pkg: '@sluice/core',
    shapes: ['hot'],
    algorithm: 'concurrency',
    create(rate) {
      const bulkhead = concurrency({ max: rate.limit })
      return {
        call() {
          if (!bulkhead.tryAcquire()) return false
          bulkhead.release()
          return true
        },
        admitted: identity,
      }
    },
  }),
  define<ClientRateLimitInfo>({
    id: 'peer/express-rate-limit',
    label: 'express-rate-limit · MemoryStore.increment',
    short: 'express-rate-limit',
    side: 'peer',
    pkg: 'express-rate-limit',
    shapes: ['hot', 'keyed', 'insert'],
    create(rate) {
      const store = new ExpressMemoryStore()
      store.init({ windowMs: rate.windowMs } as Parameters<ExpressMemoryStore['init']>[0])
      return { call: (key) => store.increment(key), admitted: withinLimit(rate.limit) }
    },
  }),
  define<HonoClientInfo>({
    id: 'peer/hono-rate-limiter',
    label: 'hono-rate-limiter · MemoryStore.increment',
    short: 'hono-rate-limiter',
    side: 'peer',
    pkg: 'hono-rate-limiter',
    shapes: ['hot', 'keyed', 'insert'],
    create(rate) {
      const store = new HonoMemoryStore()
      store.init({ windowMs: rate.windowMs } as Parameters<HonoMemoryStore['init']>[0])
      return { call: (key) => store.increment(key), admitted: withinLimit(rate.limit) }
    },
  }),
  define<RateLimiterRes>({
    id: 'peer/rate-limiter-flexible',
    label: 'rate-limiter-flexible · RateLimiterMemory.consume',
    short: 'rate-limiter-flexible',
    side: 'peer',
    pkg: 'rate-limiter-flexible',
    shapes: ['hot', 'keyed'],
    create(rate) {
      const limiter = new RateLimiterMemory({
        points: rate.limit,
        duration: rate.windowMs / 1000,
      })
      return {
        call: (key) => limiter.consume(key),
        admitted: () => true,
        // consume() rejects with a RateLimiterRes when the key is over its points.
        refusal: (error) => error instanceof RateLimiterRes,
      }
    },
  }),
  define<KoaMemoryEntry>({
    id: 'peer/koa-ratelimit',
    label: 'koa-ratelimit · memory driver get()',
    short: 'koa-ratelimit',
    side: 'peer',
    pkg: 'koa-ratelimit',
    shapes: ['hot', 'keyed'],
    create(rate) {
      const MemoryLimiter = loadKoaMemoryLimiter()
      const db = new Map<string, unknown>()
      const { limit: max, windowMs: duration } = rate
      // The middleware builds one Limiter per request around the shared Map, as here.
      return {
        call: (id) => new MemoryLimiter({ id, db, max, duration }).get(),
        admitted: (entry) => entry.remaining > 0,
      }
    },
  }),
  define<boolean>({
    id: 'peer/limiter-rate-limiter',
    label: 'limiter · RateLimiter.tryRemoveTokens',
    short: 'limiter RateLimiter',
    side: 'peer',
    pkg: 'limiter',
    shapes: ['hot', 'keyed'],
    create(rate, options) {
      const make = () =>
        new LimiterRateLimiter({ tokensPerInterval: rate.limit, interval: rate.windowMs })
      if (options.keys === 1) {
        // One client: the limiter object itself, as sluice's hot key uses its limiter.
        const limiter = make()
        return { call: () => limiter.tryRemoveTokens(1), admitted: identity }
      }
      const limiters = new Map<string, LimiterRateLimiter>()
      return {
        call(key) {
          let limiter = limiters.get(key)
          if (limiter === undefined) {
            limiter = make()
            limiters.set(key, limiter)
          }
          return limiter.tryRemoveTokens(1)
        },
        admitted: identity,
      }
    },
  }),
  define<boolean>({
    id: 'peer/limiter-token-bucket',
    label: 'limiter · TokenBucket.tryRemoveTokens',
    short: 'limiter TokenBucket',
    side: 'peer',
    pkg: 'limiter',
    shapes: ['hot', 'keyed'],
    create(rate, options) {
      const make = () => {
        const bucket = new LimiterTokenBucket({
          bucketSize: rate.limit,
          tokensPerInterval: rate.limit,
          interval: rate.windowMs,
        })
        // A TokenBucket starts empty; RateLimiter fills its own, and so do we, so both
        // start where every other limiter here starts: with a full budget.
        bucket.content = rate.limit
        return bucket
      }
      if (options.keys === 1) {
        const bucket = make()
        return { call: () => bucket.tryRemoveTokens(1), admitted: identity }
      }
      const buckets = new Map<string, LimiterTokenBucket>()
      return {
        call(key) {
          let bucket = buckets.get(key)
          if (bucket === undefined) {
            bucket = make()
            buckets.set(key, bucket)
          }
          return bucket.tryRemoveTokens(1)
        },
        admitted: identity,
      }
    },
  }),
]

/**
 * The contender with this id.
 *
 * @example
 * ```ts
 * contender('floor/gcra-map').label // 'floor: inline GCRA on Map<string, number>'
 * ```
 */
export function contender(id: string): Contender {
  const found = CONTENDERS.find((c) => c.id === id)
  if (found === undefined) throw new RangeError(`bench: no contender "${id}"`)
  return found
}

/**
 * The rate a contender is measured at in the decision-cost and memory sections, for a
 * scenario with `keys` keys: one it never reaches, so every timed decision is an
 * admission (see `HOT_RATE`, `KEYED_RATE`, `PACED_RATE`).
 *
 * @example
 * ```ts
 * benchRate(contender('sluice/leaky-bucket'), 1) // PACED_RATE
 * ```
 */
export function benchRate(c: Contender, keys: number): Rate {
  if (c.algorithm === 'leaky-bucket') return PACED_RATE
  return keys === 1 ? HOT_RATE : KEYED_RATE
}

/**
 * One decision, awaited, as a boolean: what the tests and the harness's sanity checks use
 * (timed code calls `call` directly).
 *
 * @example
 * ```ts
 * await decide(contender('floor/gcra-map').create({ limit: 1, windowMs: 1000 }, { keys: 1 }), 'a') // true
 * ```
 */
export async function decide(instance: Instance, key: string): Promise<boolean> {
  try {
    return instance.admitted(await instance.call(key))
  } catch (error) {
    if (instance.refusal?.(error)) return false
    throw error
  }
}
