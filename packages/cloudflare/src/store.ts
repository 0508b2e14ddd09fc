import type { Duration } from '@sluice/core'
import { describe, readInteger, readOptions } from '@sluice/core/validation'
import {
  type AsyncStore,
  type LeaseOptions,
  type Policy,
  type TakeResult,
  withLeases,
} from '@sluice/keyed'
import {
  checkBlock,
  checkCost,
  Fallback,
  fromWire,
  REMOTE_STORE_OPTIONS,
  type RemoteStoreOptions,
  readRemoteStoreOptions,
  recordPolicy,
  StoreHealth,
} from '@sluice/keyed/store'
import type { Operation } from './protocol'

export type { OnError } from '@sluice/keyed/store'

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
 * Options of {@link durableObjectStore}: the binding and how keys spread over objects,
 * and the options every remote store takes (`timeout`, `onError`, `local`, `leaseTtl`,
 * `probeInterval`, `onFailure`, `onRecovery`), read by the same rules as `redisStore`'s.
 */
export interface DurableObjectStoreOptions extends RemoteStoreOptions<DurableObjectStoreError> {
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
   * Quota leases (`withLeases` of `@sluice/keyed`): an isolate takes a block of permits in
   * one call to the object and decides locally until it is spent or `ttl` ends. Unspent
   * permits go back on the isolate's next call (Workers allow no I/O between requests).
   * Default: off, every decision one call.
   */
  lease?: LeaseOptions
}

/** A store on Durable Objects: every method answers with a promise. */
export interface DurableObjectStore extends AsyncStore {
  /**
   * `'up'` while every decision goes to its object; `'down'` while any object is out of
   * use: from a failed call on it until a call on it answers again.
   */
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
const OPTIONS = ['namespace', 'shards', 'prefix', 'lease', ...REMOTE_STORE_OPTIONS]
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
  const settings = readRemoteStoreOptions(FACTORY, options, { timeout: '1s' })
  const { timeoutMs, leaseTtlMs } = settings
  // Probed in-band: on Workers a call belongs to the request that made it, so no timer
  // can try an object between requests; the first decision after probeInterval does.
  const health = new StoreHealth<number, DurableObjectStoreError>({
    store: FACTORY,
    onError: settings.onError,
    probeMs: settings.probeMs,
    onFailure: settings.onFailure,
    onRecovery: settings.onRecovery,
    warnings: {
      down: 'ERR_SLUICE_DO_DOWN',
      until: 'the objects answer again',
      recovered: 'ERR_SLUICE_DO_RECOVERED',
      recovery: 'the Durable Objects answer again; decisions are back on them',
    },
  })
  const fallback = new Fallback(settings)

  const ids: unknown[] = []
  /** The policy part of each request body, serialized once per policy. */
  const wire = new WeakMap<Policy, string>()

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
          const { id, state, fingerprint, carry, spec, windowMs, block } = policy
          json = JSON.stringify({ id, state, fingerprint, carry, spec, windowMs, block })
          wire.set(policy, json)
        }
        return json
      })
      .join(',')}]`
  }

  /** Sends one operation to one object; rejects with a DurableObjectStoreError. */
  async function send(shard: number, body: string): Promise<unknown> {
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

  /**
   * Sends one operation to the shard of `key` and tells the store's health how it went;
   * rejects with a DurableObjectStoreError.
   */
  async function call(key: string, shard: number, body: string): Promise<unknown> {
    const since = health.episode
    try {
      const reply = await send(shard, body)
      health.answered(shard)
      return reply
    } catch (error) {
      health.fail(shard, key, error as DurableObjectStoreError, since)
      throw error
    }
  }

  /** Asks the shard of `key`, or (while it is out of use, or on failure) `fallback`. */
  async function decide<T>(
    key: string,
    body: string,
    decode: (reply: unknown) => T,
    answerHere: () => Promise<T>,
  ): Promise<T> {
    const shard = shardOf(key, shards)
    if (health.outOfUse(shard)) return answerHere()
    let reply: unknown
    try {
      reply = await call(key, shard, body)
    } catch {
      return answerHere()
    }
    return decode(reply)
  }

  const operation = (op: Operation) => JSON.stringify(op)

  const store: DurableObjectStore = {
    carries: true,
    get status() {
      return health.status
    },

    async take(key, policies, cost) {
      checkCost(`${FACTORY}.take`, cost, policies.length)
      if (policies.length === 0) return { allowed: true, results: [] }
      // Named here, so that a take the object runs twice (its answer lost, the call
      // retried) holds one slot and counts once.
      const lease = policies.some((policy) => policy.spec.algorithm === 'concurrency')
        ? `,"lease":${JSON.stringify(crypto.randomUUID())}`
        : ''
      const body = `{"op":"take","key":${JSON.stringify(key)},"cost":${JSON.stringify(cost)},"leaseTtlMs":${leaseTtlMs}${lease},"policies":${policiesJson(policies)}}`
      return decide(
        key,
        body,
        (reply) => decode(reply, policies),
        () => fallback.take(key, policies, cost),
      )
    },

    async refund(key, policies, cost, receipts) {
      checkCost(`${FACTORY}.refund`, cost, policies.length)
      if (policies.length === 0) return
      const shard = shardOf(key, shards)
      if (await fallback.refund(key, policies, cost, receipts, () => health.outOfUse(shard))) {
        return
      }
      const body = `{"op":"refund","key":${JSON.stringify(key)},"cost":${JSON.stringify(cost)},"receipts":${JSON.stringify(receipts?.map((r) => r ?? null) ?? null)},"policies":${policiesJson(policies)}}`
      await call(key, shard, body).catch(() => {})
    },

    async force(key, policies, cost) {
      checkCost(`${FACTORY}.force`, cost, policies.length)
      if (policies.length === 0) return []
      const body = `{"op":"force","key":${JSON.stringify(key)},"cost":${JSON.stringify(cost)},"policies":${policiesJson(policies)}}`
      return decide(
        key,
        body,
        (reply) => decode(reply, policies).results,
        () => fallback.force(key, policies, cost),
      )
    },

    async block(key, policies, ms) {
      checkBlock(`${FACTORY}.block`, ms)
      if (policies.length === 0) return
      await fallback.block(key, policies, ms)
      await call(
        key,
        shardOf(key, shards),
        `{"op":"block","key":${JSON.stringify(key)},"ms":${ms},"policies":${policiesJson(policies)}}`,
      )
    },

    async release(key, policy, lease) {
      if (await fallback.release(key, policy, lease)) return
      // Tried even while down: a slot freed now beats one held until its lease expires.
      const body = `{"op":"release","key":${JSON.stringify(key)},"lease":${JSON.stringify(lease.id)},"policies":${policiesJson([policy])}}`
      await call(key, shardOf(key, shards), body).catch(() => {})
    },

    async get(key, policies) {
      if (policies.length === 0) return []
      const body = `{"op":"get","key":${JSON.stringify(key)},"policies":${policiesJson(policies)}}`
      return decide(
        key,
        body,
        (reply) => decode(reply, policies).results,
        () => fallback.get(key, policies),
      )
    },

    async reset(key, policies) {
      await fallback.reset(key, policies)
      const ids = policies?.map(recordPolicy)
      await call(key, shardOf(key, shards), operation({ op: 'reset', key, policies: ids }))
    },

    async resetAll() {
      await fallback.resetAll()
      const body = operation({ op: 'resetAll' })
      await Promise.all(
        Array.from({ length: shards }, (_, shard) => call(`${prefix}:${shard}`, shard, body)),
      )
    },
  }
  const { lease } = options
  return lease === undefined
    ? store
    : (withLeases(store, lease, FACTORY) as unknown as DurableObjectStore)
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

/** The object's answer for `policies`; a reply of another shape is an error of the store's. */
function decode(reply: unknown, policies: readonly Policy[]): TakeResult {
  const taken = fromWire(reply, policies)
  if (taken === undefined) {
    throw new DurableObjectStoreError(
      'ERR_SLUICE_DO',
      `${FACTORY}: unexpected answer ${JSON.stringify(reply)}`,
    )
  }
  return taken
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
