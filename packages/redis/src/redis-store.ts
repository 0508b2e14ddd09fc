import { randomUUID } from 'node:crypto'
import { type Duration, parseDuration } from '@sluice/core'
import {
  type Lease,
  memoryStore,
  type Policy,
  type PolicyResult,
  type Store,
  type TakeResult,
} from '@sluice/http'
import { type RedisClient, toSendCommand } from './client'
import { stateKey } from './keys'
import { type EncodedPolicy, encodePolicy } from './policies'
import { SCRIPT, SCRIPT_SHA } from './script'

/**
 * What the store answers while Redis is unreachable: `'deny'` fails closed, `'allow'`
 * fails open, `'local'` keeps limiting per process.
 *
 * @example
 * const onError: OnError = process.env.NODE_ENV === 'production' ? 'local' : 'deny'
 */
export type OnError = 'deny' | 'allow' | 'local'

/**
 * Options of {@link redisStore}.
 *
 * @example
 * const options: RedisStoreOptions = { client: new Redis(), timeout: '250ms', onError: 'local' }
 */
export interface RedisStoreOptions {
  /** An ioredis client (standalone or Cluster), a node-redis v4+ client, or a `sendCommand` function. */
  client: RedisClient
  /** Prepended to every key. Must not contain `{` or `}` (they would break the hash tag). Default `'sluice:'`. */
  prefix?: string
  /** Longest wait for one Redis round trip before the call counts as failed. Default `'500ms'`. */
  timeout?: Duration
  /**
   * While Redis fails: `'deny'` rejects every request, `'allow'` admits every request
   * without counting, `'local'` counts in an in-memory store of this process. Default `'local'`.
   */
  onError?: OnError
  /** Called once when Redis starts failing (not once per request). Default: one `console.warn`. */
  onFailure?: (error: RedisStoreError) => void
  /** Called once when Redis answers again after a failure. Default: one `console.warn`. */
  onRecovery?: () => void
  /**
   * How long a concurrency slot is held at most: a process that crashes while holding one
   * frees it after this long. Make it longer than your slowest request. Default `'1m'`.
   */
  leaseTtl?: Duration
  /** While Redis fails, how often to check (PING) whether it is back. Default `'1s'`. */
  probeInterval?: Duration
  /** The store that answers with `onError: 'local'`. Default: `memoryStore()`. */
  local?: Store
}

/**
 * A store whose state lives in Redis, shared by every process that uses the same Redis and
 * prefix. Every method answers with a promise.
 *
 * @example
 * const store: RedisStore = redisStore({ client: new Redis() })
 * app.get('/health', (req, res) => res.json({ redis: store.status }))
 */
export interface RedisStore extends Store {
  take(key: string, policies: readonly Policy[], cost: number): Promise<TakeResult>
  refund(key: string, policies: readonly Policy[], cost: number): Promise<void>
  release(key: string, policy: Policy, lease: Lease): Promise<void>
  get(key: string, policies: readonly Policy[]): Promise<readonly PolicyResult[]>
  reset(key: string, policies?: readonly Policy[]): Promise<void>
  /** `'up'` while decisions go to Redis; `'down'` from a failure until a probe succeeds. */
  readonly status: 'up' | 'down'
}

/**
 * Why a Redis call failed: `ERR_SLUICE_REDIS_TIMEOUT` (no answer within `timeout`) or
 * `ERR_SLUICE_REDIS` (the client or server reported an error, kept as `cause`). Handed to
 * `onFailure`, and thrown by `reset`, which has no `onError` answer.
 *
 * @example
 * redisStore({
 *   client,
 *   onFailure: (error) => metrics.increment('redis_store_failure', { code: error.code }),
 * })
 */
export class RedisStoreError extends Error {
  override readonly name = 'RedisStoreError'
  readonly code: 'ERR_SLUICE_REDIS_TIMEOUT' | 'ERR_SLUICE_REDIS'

  constructor(code: RedisStoreError['code'], message: string, options?: { cause: unknown }) {
    super(message, options)
    this.code = code
  }
}

const ON_ERROR: readonly OnError[] = ['deny', 'allow', 'local']
// Lease ids that never reach Redis: taken from the local fallback, or admitted uncounted.
const LOCAL = 'local:'
const UNCOUNTED = 'uncounted:'

/**
 * A {@link Store} on Redis (or Valkey, or Redis Cluster): every process using the same Redis
 * and `prefix` shares one budget per policy and client key. Each decision is one EVALSHA of
 * one Lua script that checks all of a request's policies and takes from all or none, on
 * Redis's own clock. Keys expire once their state is back to fresh.
 *
 * A failing or slow Redis never hangs a request: each call gives up after `timeout`, the
 * failure is reported once through `onFailure`, and until a background PING succeeds every
 * decision is answered at once by the `onError` policy.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis'
 * import { rateLimit } from '@sluice/express'
 * import { redisStore } from '@sluice/redis'
 *
 * const store = redisStore({ client: new Redis(), onError: 'local' })
 * app.use(rateLimit({ limit: 100, window: '1m', store }))
 * ```
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`redisStore: options must be an object, got ${describe(options)}`)
  }
  const send = toSendCommand(options.client)
  const prefix = readPrefix(options.prefix)
  const timeoutMs = readPositiveDuration('timeout', options.timeout, '500ms')
  const leaseTtlUs = Math.ceil(readPositiveDuration('leaseTtl', options.leaseTtl, '1m') * 1000)
  const probeMs = readPositiveDuration('probeInterval', options.probeInterval, '1s')
  const onError = options.onError ?? 'local'
  if (!ON_ERROR.includes(onError)) {
    throw new TypeError(
      `redisStore: "onError" must be one of 'deny', 'allow', 'local', got ${describe(onError)}`,
    )
  }
  const onFailure = readHook('onFailure', options.onFailure) ?? warnFailure(onError)
  const onRecovery = readHook('onRecovery', options.onRecovery) ?? warnRecovery
  if (options.local !== undefined && onError !== 'local') {
    throw new TypeError(
      `redisStore: "local" is only used with onError 'local', got onError ${describe(onError)}`,
    )
  }
  if (options.local !== undefined && !isStore(options.local)) {
    throw new TypeError(
      `redisStore: "local" must be a store (take, refund, release, get, reset), got ${describe(options.local)}`,
    )
  }
  const local = onError === 'local' ? (options.local ?? memoryStore()) : undefined

  const encoded = new WeakMap<Policy, EncodedPolicy>()
  // Policy names seen by this store: what `reset(key)` without policies forgets.
  const names = new Set<string>()
  const localLeases = new Map<string, Lease>()
  let down = false
  let probing = false
  let failedAt = 0
  // Bumped on every recovery: a call that started before it belongs to the episode that
  // was already reported, so its late failure must not start a new one.
  let episode = 0

  function encode(policies: readonly Policy[]): string[] {
    const args: string[] = []
    const seen = new Set<string>()
    for (const policy of policies) {
      if (seen.has(policy.name)) {
        throw new RangeError(
          `redisStore: policy names must be unique within one call, got "${policy.name}" twice`,
        )
      }
      seen.add(policy.name)
      let entry = encoded.get(policy)
      if (entry === undefined) {
        entry = encodePolicy(policy, leaseTtlUs)
        encoded.set(policy, entry)
        names.add(policy.name)
      }
      args.push(...entry)
    }
    return args
  }

  function keysOf(key: string, policyNames: Iterable<string>): string[] {
    return Array.from(policyNames, (name) => stateKey(prefix, key, name))
  }

  function call(args: string[], key: string | undefined): Promise<unknown> {
    return withTimeout(() => send(args, key), timeoutMs)
  }

  async function runScript(keys: string[], argv: string[]): Promise<unknown> {
    const head = String(keys.length)
    return withTimeout(async (expired) => {
      try {
        return await send(['EVALSHA', SCRIPT_SHA, head, ...keys, ...argv], keys[0])
      } catch (error) {
        // Redis restarted or flushed its script cache: EVAL sends the body and caches it
        // again on the node that owns the key (SCRIPT LOAD could reach the wrong node).
        // A call its caller has given up on is not replayed: nobody would use its permits.
        if (!isNoScript(error) || expired()) throw error
        return await send(['EVAL', SCRIPT, head, ...keys, ...argv], keys[0])
      }
    }, timeoutMs)
  }

  function fail(error: unknown, since: number): void {
    if (down || since !== episode) return
    down = true
    failedAt = performance.now()
    safely(() => onFailure(toStoreError(error)))
  }

  // While down, decisions skip Redis; one PING at a time, at most every probeInterval,
  // finds out when it is back. Requests never wait for the probe.
  function redisUsable(): boolean {
    if (!down) return true
    if (!probing && performance.now() - failedAt >= probeMs) {
      probing = true
      call(['PING'], undefined).then(
        () => {
          probing = false
          down = false
          episode++
          safely(onRecovery)
        },
        () => {
          probing = false
          failedAt = performance.now()
        },
      )
    }
    return false
  }

  async function fallbackTake(
    key: string,
    policies: readonly Policy[],
    cost: number,
  ): Promise<TakeResult> {
    if (local === undefined) {
      const allowed = onError === 'allow'
      return { allowed, results: policies.map((policy) => substitute(policy, allowed, cost)) }
    }
    const taken = await local.take(key, policies, cost)
    return {
      allowed: taken.allowed,
      results: taken.results.map((result) => {
        if (result.lease === undefined) return result
        const id = `${LOCAL}${randomUUID()}`
        localLeases.set(id, result.lease)
        return { ...result, lease: { id, permits: result.lease.permits } }
      }),
    }
  }

  function substitute(policy: Policy, allowed: boolean, cost: number): PolicyResult {
    if (!allowed) {
      return {
        policy,
        allowed,
        limit: policy.limit,
        remaining: 0,
        resetMs: probeMs,
        retryAfterMs: probeMs,
      }
    }
    const result = {
      policy,
      allowed,
      limit: policy.limit,
      remaining: policy.limit,
      resetMs: 0,
      retryAfterMs: 0,
    }
    return policy.spec.algorithm === 'concurrency'
      ? { ...result, lease: { id: `${UNCOUNTED}${randomUUID()}`, permits: cost } }
      : result
  }

  return {
    get status() {
      return down ? 'down' : 'up'
    },

    async take(key, policies, cost) {
      checkCost(cost)
      const argv = encode(policies)
      if (policies.length === 0) return { allowed: true, results: [] }
      if (!redisUsable()) return fallbackTake(key, policies, cost)
      const hasLease = policies.some((policy) => policy.spec.algorithm === 'concurrency')
      const leaseId = hasLease ? randomUUID() : ''
      const since = episode
      let reply: unknown
      try {
        reply = await runScript(keysOf(key, policyNames(policies)), [
          'take',
          String(cost),
          leaseId,
          ...argv,
        ])
      } catch (error) {
        fail(error, since)
        return fallbackTake(key, policies, cost)
      }
      return parseReply(reply, policies, cost, leaseId)
    },

    async refund(key, policies, cost) {
      checkCost(cost)
      const argv = encode(policies)
      if (policies.length === 0) return
      if (!redisUsable()) {
        // The permits were most likely taken where this store answers now.
        await local?.refund(key, policies, cost)
        return
      }
      const since = episode
      try {
        await runScript(keysOf(key, policyNames(policies)), ['refund', String(cost), '', ...argv])
      } catch (error) {
        fail(error, since)
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
      const since = episode
      try {
        const stateKeyName = stateKey(prefix, key, policy.name)
        await call(['ZREM', stateKeyName, `${lease.permits}:${lease.id}`], stateKeyName)
      } catch (error) {
        fail(error, since)
      }
    },

    async get(key, policies) {
      const argv = encode(policies)
      if (policies.length === 0) return []
      if (redisUsable()) {
        const since = episode
        try {
          const reply = await runScript(keysOf(key, policyNames(policies)), [
            'get',
            '1',
            '',
            ...argv,
          ])
          return parseReply(reply, policies, 1, '').results
        } catch (error) {
          fail(error, since)
        }
      }
      if (local !== undefined) return local.get(key, policies)
      return policies.map((policy) => substitute(policy, onError === 'allow', 1))
    },

    async reset(key, policies) {
      if (policies !== undefined) encode(policies)
      await local?.reset(key, policies)
      const keys = keysOf(key, policies === undefined ? names : policyNames(policies))
      if (keys.length === 0) return
      const since = episode
      try {
        await call(['DEL', ...keys], keys[0])
      } catch (error) {
        fail(error, since)
        throw error
      }
    },
  }
}

function policyNames(policies: readonly Policy[]): string[] {
  return policies.map((policy) => policy.name)
}

function parseReply(
  reply: unknown,
  policies: readonly Policy[],
  cost: number,
  leaseId: string,
): TakeResult {
  if (!Array.isArray(reply) || reply.length !== 1 + 4 * policies.length) {
    throw new RedisStoreError(
      'ERR_SLUICE_REDIS',
      `redisStore: unexpected script reply ${JSON.stringify(reply)}`,
    )
  }
  const field = (i: number) => String(reply[i])
  const allowed = field(0) === '1'
  const results = policies.map((policy, i): PolicyResult => {
    const at = 1 + 4 * i
    const retryUs = field(at + 3)
    const result = {
      policy,
      allowed: field(at) === '1',
      limit: policy.limit,
      remaining: Number(field(at + 1)),
      resetMs: Number(field(at + 2)) / 1000,
      retryAfterMs: retryUs === '-1' ? Number.POSITIVE_INFINITY : Number(retryUs) / 1000,
    }
    return allowed && policy.spec.algorithm === 'concurrency'
      ? { ...result, lease: { id: leaseId, permits: cost } }
      : result
  })
  return { allowed, results }
}

/**
 * Runs `operation`, rejecting with `ERR_SLUICE_REDIS_TIMEOUT` if it has not settled in `ms`,
 * or with `ERR_SLUICE_REDIS` wrapping its own error. The operation can ask whether the
 * time is up (`expired()`) before sending more.
 */
function withTimeout<T>(operation: (expired: () => boolean) => Promise<T>, ms: number): Promise<T> {
  let timedOut = false
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      timedOut = true
      reject(
        new RedisStoreError(
          'ERR_SLUICE_REDIS_TIMEOUT',
          `redisStore: Redis did not answer within ${ms} ms`,
        ),
      )
    }, ms)
    const settle =
      <A extends unknown[]>(fn: (...args: A) => void) =>
      (...args: A) => {
        clearTimeout(timer)
        fn(...args)
      }
    // A synchronous throw from a client counts as a failed call, like a rejection.
    new Promise<T>((inner) => inner(operation(() => timedOut))).then(
      settle(resolve),
      settle((error: unknown) => reject(toStoreError(error))),
    )
  })
}

function toStoreError(error: unknown): RedisStoreError {
  if (error instanceof RedisStoreError) return error
  return new RedisStoreError('ERR_SLUICE_REDIS', `redisStore: Redis failed: ${messageOf(error)}`, {
    cause: error,
  })
}

function isNoScript(error: unknown): boolean {
  return messageOf(error).startsWith('NOSCRIPT')
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function checkCost(cost: number): void {
  if (!Number.isSafeInteger(cost) || cost < 1) {
    throw new RangeError(`redisStore: "cost" must be a positive integer, got ${describe(cost)}`)
  }
}

function readPrefix(value: unknown): string {
  if (value === undefined) return 'sluice:'
  if (typeof value !== 'string') {
    throw new TypeError(`redisStore: "prefix" must be a string, got ${describe(value)}`)
  }
  if (/[{}]/.test(value)) {
    throw new RangeError(
      `redisStore: "prefix" must not contain "{" or "}" (it would break the Cluster hash tag), got ${describe(value)}`,
    )
  }
  return value
}

function readPositiveDuration(option: string, value: unknown, fallback: Duration): number {
  const ms = parseDuration((value ?? fallback) as Duration, `redisStore: "${option}"`)
  if (ms === 0) {
    throw new RangeError(
      `redisStore: "${option}" must be a positive duration, got ${describe(value)}`,
    )
  }
  return ms
}

function readHook<F>(option: string, value: F | undefined): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new TypeError(`redisStore: "${option}" must be a function, got ${describe(value)}`)
  }
  return value
}

function isStore(value: unknown): value is Store {
  if (typeof value !== 'object' || value === null) return false
  const store = value as Record<string, unknown>
  return ['take', 'refund', 'release', 'get', 'reset'].every(
    (method) => typeof store[method] === 'function',
  )
}

function warnFailure(onError: OnError): (error: RedisStoreError) => void {
  return (error) => {
    console.warn(
      `[sluice] ${error.message}; answering with onError '${onError}' until it is back (${error.code})`,
    )
  }
}

function warnRecovery(): void {
  console.warn('[sluice] redisStore: Redis answers again; decisions are back on Redis')
}

// A throwing hook must not turn a decision into an error.
function safely(hook: () => void): void {
  try {
    hook()
  } catch {}
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (value === null) return 'null'
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object'
  return String(value)
}
