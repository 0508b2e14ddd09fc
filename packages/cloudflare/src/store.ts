import type { Duration } from '@sluice/core'
import {
  describe,
  readFunction,
  readInteger,
  readOneOf,
  readOptions,
  readPositiveDuration,
} from '@sluice/core/validation'
import {
  type AsyncStore,
  type Lease,
  memoryStore,
  type Policy,
  type PolicyResult,
  type Store,
  type TakeResult,
} from '@sluice/keyed'
import {
  type Cost,
  checkBlock,
  checkCost,
  costAt,
  emitWarning,
  storeChannel,
  warnIfBareMilliseconds,
} from '@sluice/keyed/store'
import type { Operation, WireResult, WireTake } from './protocol'

/** The part of a Durable Object stub the store uses: `fetch(url, init)`. */
export interface DurableObjectStubLike {
  fetch(
    url: string,
    init: { method: string; body: string; headers: Record<string, string> },
  ): Promise<{ readonly ok: boolean; readonly status: number; text(): Promise<string> }>
}

/**
 * The part of a Durable Object namespace binding (`env.SLUICE`) the store uses. Typed
 * loosely so that `@cloudflare/workers-types` is not needed; a real binding fits.
 */
export interface DurableObjectNamespaceLike<Id = unknown> {
  idFromName(name: string): Id
  get(id: Id): DurableObjectStubLike
}

/**
 * What the store answers while its objects cannot be reached: `'deny'` fails closed,
 * `'allow'` fails open, `'local'` keeps limiting in this isolate.
 */
export type OnError = 'deny' | 'allow' | 'local'

/** Options of {@link durableObjectStore}. */
export interface DurableObjectStoreOptions {
  /** The binding of the `SluiceDurableObject` class (`env.SLUICE`). */
  namespace: DurableObjectNamespaceLike
  /**
   * How many objects the client keys are spread over (by a hash of the key). One object
   * decides one request at a time, so more shards carry more traffic; `resetAll` asks
   * each of them. Default 32.
   */
  shards?: number
  /** Names the objects (`<prefix>:<shard>`): stores with different prefixes share nothing. Default `'sluice'`. */
  prefix?: string
  /** Longest wait for an object's answer before the call counts as failed. Default `'1s'`. */
  timeout?: Duration
  /**
   * While the objects fail: `'deny'` refuses every request, `'allow'` admits every request
   * uncounted, `'local'` counts in a `memoryStore()` of this isolate. Default `'local'`.
   */
  onError?: OnError
  /** Called once when the objects start failing (not once per request). Default: one `SluiceWarning`. */
  onFailure?: (error: DurableObjectStoreError) => void
  /** Called once when they answer again. Default: one `SluiceWarning`. */
  onRecovery?: () => void
  /**
   * How long a concurrency slot is held at most: an isolate that dies while holding one
   * frees it after this long. Make it longer than your slowest request. Default `'1m'`.
   */
  leaseTtl?: Duration
  /** While the objects fail, how often a decision tries them again. Default `'1s'`. */
  probeInterval?: Duration
  /** The store that answers with `onError: 'local'`. Default: `memoryStore()`. */
  local?: Store
}

/** A store on Durable Objects: every method answers with a promise. */
export interface DurableObjectStore extends AsyncStore {
  /** `'up'` while decisions go to the objects; `'down'` from a failure until one answers again. */
  readonly status: 'up' | 'down'
}

/**
 * Why a call to an object failed: `ERR_SLUICE_DO_TIMEOUT` (no answer within `timeout`) or
 * `ERR_SLUICE_DO` (the object or the runtime reported an error, kept as `cause`). Handed
 * to `onFailure`, published on the `sluice:store` channel, and thrown by `reset` and
 * `resetAll`, which have no `onError` answer.
 */
export class DurableObjectStoreError extends Error {
  override readonly name = 'DurableObjectStoreError'
  readonly code: 'ERR_SLUICE_DO_TIMEOUT' | 'ERR_SLUICE_DO'

  constructor(
    code: DurableObjectStoreError['code'],
    message: string,
    options?: { cause: unknown },
  ) {
    super(message, options)
    this.code = code
  }
}

const FACTORY = 'durableObjectStore'
const OPTIONS = [
  'namespace',
  'shards',
  'prefix',
  'timeout',
  'onError',
  'onFailure',
  'onRecovery',
  'leaseTtl',
  'probeInterval',
  'local',
]
// Lease ids that never reach an object: taken from the local fallback, or admitted uncounted.
const LOCAL = 'local:'
const UNCOUNTED = 'uncounted:'
/** The objects' URL: only the path matters to them, and they are reachable only through the binding. */
const ENDPOINT = 'https://sluice.invalid/'

/**
 * A {@link Store} on Cloudflare Durable Objects: one budget per policy and client key for
 * every isolate and location of a Worker. The client keys are spread over `shards`
 * objects of the `SluiceDurableObject` class by a hash of the key; the object that owns a
 * key decides each of its requests alone, atomically across all of its policies, with the
 * same `@sluice/core` limiters as `memoryStore()`, and keeps the state in its storage
 * (it outlives the object's eviction from memory). One request to one object per decision.
 *
 * A failing or slow object never hangs a request: each call gives up after `timeout`, the
 * failure is reported once (`onFailure`, the `sluice:store` channel), and until an object
 * answers again (tried at most every `probeInterval`) decisions follow `onError`.
 *
 * @example
 * ```ts
 * import { env } from 'cloudflare:workers'
 * import { durableObjectStore } from '@sluice/cloudflare'
 * import { rateLimit } from '@sluice/hono'
 *
 * const store = durableObjectStore({ namespace: env.SLUICE })
 * app.use(rateLimit({ limit: 100, window: '1m', store }))
 * export { SluiceDurableObject } from '@sluice/cloudflare'
 * ```
 */
export function durableObjectStore(options: DurableObjectStoreOptions): DurableObjectStore {
  readOptions(FACTORY, options, OPTIONS)
  const { namespace } = options
  if (
    typeof namespace !== 'object' ||
    namespace === null ||
    typeof namespace.idFromName !== 'function' ||
    typeof namespace.get !== 'function'
  ) {
    throw new TypeError(
      `${FACTORY}: "namespace" must be a Durable Object namespace binding (env.SLUICE), got ${describe(namespace)}`,
    )
  }
  const shards =
    options.shards === undefined
      ? 32
      : readInteger(FACTORY, 'shards', options.shards, 1, 'an integer from 1 to 1024', 1024)
  const prefix = options.prefix ?? 'sluice'
  if (typeof prefix !== 'string' || prefix === '') {
    throw new TypeError(`${FACTORY}: "prefix" must be a non-empty string, got ${describe(prefix)}`)
  }
  warnIfBareMilliseconds(FACTORY, 'timeout', options.timeout)
  warnIfBareMilliseconds(FACTORY, 'leaseTtl', options.leaseTtl)
  warnIfBareMilliseconds(FACTORY, 'probeInterval', options.probeInterval)
  const timeoutMs = readPositiveDuration(FACTORY, 'timeout', options.timeout, '1s')
  const leaseTtlMs = readPositiveDuration(FACTORY, 'leaseTtl', options.leaseTtl, '1m')
  const probeMs = readPositiveDuration(FACTORY, 'probeInterval', options.probeInterval, '1s')
  const onError = readOneOf<OnError>(
    FACTORY,
    'onError',
    options.onError,
    ['deny', 'allow', 'local'],
    'local',
  )
  const onFailure = readFunction(FACTORY, 'onFailure', options.onFailure) ?? warnFailure(onError)
  const onRecovery = readFunction(FACTORY, 'onRecovery', options.onRecovery) ?? warnRecovery
  if (options.local !== undefined && onError !== 'local') {
    throw new TypeError(
      `${FACTORY}: "local" is only used with onError 'local', got onError ${describe(onError)}`,
    )
  }
  const local = onError === 'local' ? (options.local ?? memoryStore()) : undefined

  const ids: unknown[] = []
  /** The policy part of each request body, serialized once per policy. */
  const wire = new WeakMap<Policy, string>()
  const localLeases = new Map<string, Lease>()
  let down = false
  let failedAt = 0

  /**
   * A stub for the shard's object, made for this call: a stub belongs to the request that
   * made it, and workerd refuses its use from another ("Cannot perform I/O on behalf of a
   * different request"). Ids are plain values and are kept.
   */
  function stub(shard: number): DurableObjectStubLike {
    let id = ids[shard]
    if (id === undefined) {
      id = namespace.idFromName(`${prefix}:${shard}`)
      ids[shard] = id
    }
    return namespace.get(id)
  }

  function policiesJson(policies: readonly Policy[]): string {
    return `[${policies
      .map((policy) => {
        let json = wire.get(policy)
        if (json === undefined) {
          const { id, spec, windowMs, block } = policy
          json = JSON.stringify({ id, spec, windowMs, block })
          wire.set(policy, json)
        }
        return json
      })
      .join(',')}]`
  }

  /** Sends one operation to one object; rejects with a DurableObjectStoreError. */
  async function call(shard: number, body: string): Promise<unknown> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new DurableObjectStoreError(
              'ERR_SLUICE_DO_TIMEOUT',
              `${FACTORY}: the Durable Object did not answer within ${timeoutMs} ms`,
            ),
          ),
        timeoutMs,
      )
    })
    const answered = (async () => {
      const response = await stub(shard).fetch(ENDPOINT, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      })
      const text = await response.text()
      if (!response.ok) throw new Error(`the object answered ${response.status}: ${text}`)
      return JSON.parse(text) as unknown
    })()
    try {
      return await Promise.race([answered, expired])
    } catch (error) {
      throw toStoreError(error)
    } finally {
      clearTimeout(timer)
    }
  }

  function fail(error: DurableObjectStoreError): void {
    failedAt = performance.now()
    if (down) return
    down = true
    if (storeChannel.hasSubscribers)
      storeChannel.publish({ event: 'failure', store: FACTORY, error })
    safely(() => onFailure(error))
  }

  function recover(): void {
    if (!down) return
    down = false
    if (storeChannel.hasSubscribers) storeChannel.publish({ event: 'recovery', store: FACTORY })
    safely(onRecovery)
  }

  /** Whether to ask the objects: always while up; while down, once per `probeInterval`. */
  function usable(): boolean {
    if (!down || performance.now() - failedAt < probeMs) return !down
    failedAt = performance.now()
    return true
  }

  /** Calls an object; on failure reports it and answers with `fallback`. */
  async function decide<T>(
    shard: number,
    body: string,
    fallback: () => T | PromiseLike<T>,
  ): Promise<{ reply: unknown } | { fallback: T }> {
    if (!usable()) return { fallback: await fallback() }
    try {
      const reply = await call(shard, body)
      recover()
      return { reply }
    } catch (error) {
      fail(error as DurableObjectStoreError)
      return { fallback: await fallback() }
    }
  }

  async function fallbackTake(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
  ): Promise<TakeResult> {
    if (local === undefined) {
      const allowed = onError === 'allow'
      return {
        allowed,
        results: policies.map((policy, i) => substitute(policy, allowed, costAt(cost, i))),
      }
    }
    const taken = await local.take(key, policies, cost)
    return {
      allowed: taken.allowed,
      results: taken.results.map((result) => {
        if (result.lease === undefined) return result
        const id = `${LOCAL}${crypto.randomUUID()}`
        localLeases.set(id, result.lease)
        return { ...result, lease: { id, permits: result.lease.permits } }
      }),
    }
  }

  function substitute(policy: Policy, allowed: boolean, cost: number): PolicyResult {
    const base = { policy, allowed, limit: policy.limit }
    if (!allowed) return { ...base, remaining: 0, resetMs: probeMs, retryAfterMs: probeMs }
    const result = { ...base, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 }
    return policy.spec.algorithm === 'concurrency'
      ? { ...result, lease: { id: `${UNCOUNTED}${crypto.randomUUID()}`, permits: cost } }
      : result
  }

  const operation = (op: Operation) => JSON.stringify(op)

  return {
    get status() {
      return down ? 'down' : 'up'
    },

    async take(key, policies, cost) {
      checkCost(`${FACTORY}.take`, cost, policies.length)
      if (policies.length === 0) return { allowed: true, results: [] }
      const body = `{"op":"take","key":${JSON.stringify(key)},"cost":${JSON.stringify(cost)},"leaseTtlMs":${leaseTtlMs},"policies":${policiesJson(policies)}}`
      const answer = await decide(shardOf(key, shards), body, () =>
        fallbackTake(key, policies, cost),
      )
      if ('fallback' in answer) return answer.fallback
      return decode(answer.reply, policies)
    },

    async refund(key, policies, cost, receipts) {
      checkCost(`${FACTORY}.refund`, cost, policies.length)
      if (policies.length === 0) return
      const body = `{"op":"refund","key":${JSON.stringify(key)},"cost":${JSON.stringify(cost)},"receipts":${JSON.stringify(receipts?.map((r) => r ?? null) ?? null)},"policies":${policiesJson(policies)}}`
      if (!usable()) {
        // The permits were most likely taken where this store answers while down.
        await local?.refund(key, policies, cost, receipts)
        return
      }
      try {
        await call(shardOf(key, shards), body)
        recover()
      } catch (error) {
        fail(error as DurableObjectStoreError)
      }
    },

    async force(key, policies, cost) {
      checkCost(`${FACTORY}.force`, cost, policies.length)
      if (policies.length === 0) return []
      const body = `{"op":"force","key":${JSON.stringify(key)},"cost":${JSON.stringify(cost)},"policies":${policiesJson(policies)}}`
      const answer = await decide(shardOf(key, shards), body, () =>
        local !== undefined
          ? local.force(key, policies, cost)
          : policies.map((policy) => substitute(policy, onError === 'allow', 1)),
      )
      if ('fallback' in answer) return answer.fallback
      return decode(answer.reply, policies).results
    },

    async block(key, policies, ms) {
      checkBlock(`${FACTORY}.block`, ms)
      if (policies.length === 0) return
      await local?.block(key, policies, ms)
      try {
        await call(
          shardOf(key, shards),
          `{"op":"block","key":${JSON.stringify(key)},"ms":${ms},"policies":${policiesJson(policies)}}`,
        )
        recover()
      } catch (error) {
        fail(error as DurableObjectStoreError)
        throw error
      }
    },

    async release(key, policy, lease) {
      if (lease.id.startsWith(UNCOUNTED)) return
      if (lease.id.startsWith(LOCAL)) {
        const inner = localLeases.get(lease.id)
        if (inner === undefined) return
        localLeases.delete(lease.id)
        await local?.release(key, policy, inner)
        return
      }
      // Tried even while down: a slot freed now beats one held until its lease expires.
      try {
        await call(
          shardOf(key, shards),
          operation({ op: 'release', key, policy: policy.id, lease: lease.id }),
        )
        recover()
      } catch (error) {
        fail(error as DurableObjectStoreError)
      }
    },

    async get(key, policies) {
      if (policies.length === 0) return []
      const body = `{"op":"get","key":${JSON.stringify(key)},"policies":${policiesJson(policies)}}`
      const answer = await decide(shardOf(key, shards), body, () =>
        local !== undefined
          ? local.get(key, policies)
          : policies.map((policy) => substitute(policy, onError === 'allow', 1)),
      )
      if ('fallback' in answer) return answer.fallback
      return decode(answer.reply, policies).results
    },

    async reset(key, policies) {
      await local?.reset(key, policies)
      const ids = policies?.map((policy) => policy.id)
      try {
        await call(shardOf(key, shards), operation({ op: 'reset', key, policies: ids }))
      } catch (error) {
        fail(error as DurableObjectStoreError)
        throw error
      }
    },

    async resetAll() {
      await local?.resetAll()
      localLeases.clear()
      const body = operation({ op: 'resetAll' })
      try {
        await Promise.all(Array.from({ length: shards }, (_, shard) => call(shard, body)))
      } catch (error) {
        fail(error as DurableObjectStoreError)
        throw error
      }
    },
  }
}

/**
 * The shard of a client key: FNV-1a over its UTF-16 code units, so every isolate and
 * location sends a key to the same object.
 */
export function shardOf(key: string, shards: number): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0) % shards
}

function decode(reply: unknown, policies: readonly Policy[]): TakeResult {
  const take = reply as WireTake
  if (
    typeof take !== 'object' ||
    take === null ||
    !Array.isArray(take.results) ||
    take.results.length !== policies.length
  ) {
    throw new DurableObjectStoreError(
      'ERR_SLUICE_DO',
      `${FACTORY}: unexpected answer ${JSON.stringify(reply)}`,
    )
  }
  return {
    allowed: take.allowed === true,
    results: take.results.map((result: WireResult, i): PolicyResult => {
      const policy = policies[i]!
      const decoded: { -readonly [K in keyof PolicyResult]: PolicyResult[K] } = {
        policy,
        allowed: result.allowed,
        limit: policy.limit,
        remaining: result.remaining,
        resetMs: result.resetMs,
        retryAfterMs: result.retryAfterMs ?? Number.POSITIVE_INFINITY,
      }
      if (result.lease !== undefined) decoded.lease = result.lease
      if (result.receipt !== undefined) decoded.receipt = result.receipt
      if (result.blocked === true) decoded.blocked = true
      return decoded
    }),
  }
}

function toStoreError(error: unknown): DurableObjectStoreError {
  if (error instanceof DurableObjectStoreError) return error
  const message = error instanceof Error ? error.message : String(error)
  return new DurableObjectStoreError(
    'ERR_SLUICE_DO',
    `${FACTORY}: the Durable Object failed: ${message}`,
    { cause: error },
  )
}

function warnFailure(onError: OnError): (error: DurableObjectStoreError) => void {
  return (error) => {
    emitWarning(
      FACTORY,
      'ERR_SLUICE_DO_DOWN',
      `${error.message.replace(`${FACTORY}: `, '')} (${error.code}); answering with onError '${onError}' until the objects answer again`,
      true,
    )
  }
}

function warnRecovery(): void {
  emitWarning(
    FACTORY,
    'ERR_SLUICE_DO_RECOVERED',
    'the Durable Objects answer again; decisions are back on them',
    true,
  )
}

// A throwing hook must not turn a decision into an error.
function safely(hook: () => void): void {
  try {
    hook()
  } catch {}
}
