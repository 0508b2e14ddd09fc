/**
 * Why a Redis call failed: `ERR_SLUICE_REDIS_TIMEOUT` (no answer within `timeout`) or
 * `ERR_SLUICE_REDIS` (the client or server reported an error, kept as `cause`). Handed to
 * `onFailure`, published on the `sluice:store` channel, and thrown by `reset` and
 * `resetAll`, which have no `onError` answer.
 *
 * @example
 * ```ts
 * redisStore({
 *   client,
 *   onFailure: (error) => metrics.increment('redis_store_failure', { code: error.code }),
 * })
 * ```
 */
export class RedisStoreError extends Error {
  override readonly name = 'RedisStoreError'
  readonly code: 'ERR_SLUICE_REDIS_TIMEOUT' | 'ERR_SLUICE_REDIS'

  constructor(code: RedisStoreError['code'], message: string, options?: { cause: unknown }) {
    super(message, options)
    this.code = code
  }
}

/** The error of a call that got no answer within `ms`. */
export function timeoutError(ms: number): RedisStoreError {
  return new RedisStoreError(
    'ERR_SLUICE_REDIS_TIMEOUT',
    `redisStore: Redis did not answer within ${ms} ms`,
  )
}

/** Any failure of a call, as a {@link RedisStoreError} (the original kept as `cause`). */
export function toStoreError(error: unknown): RedisStoreError {
  if (error instanceof RedisStoreError) return error
  return new RedisStoreError('ERR_SLUICE_REDIS', `redisStore: Redis failed: ${messageOf(error)}`, {
    cause: error,
  })
}

/** The part of an ioredis `Redis` client that says where it connects and how that went. */
interface IoRedisConnection {
  readonly status: string
  readonly options: { readonly host?: string; readonly port: number; readonly path?: string | null }
  /** The socket; Node's `errored` keeps the error it failed with (ECONNREFUSED, ENOTFOUND). */
  readonly stream?: { readonly errored?: Error | null }
}

/** A standalone ioredis client: one that knows its address (a Cluster knows many). */
export function isStandaloneIoRedis(client: unknown): client is IoRedisConnection {
  const candidate = client as Partial<IoRedisConnection> | null
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.status === 'string' &&
    typeof candidate.options?.port === 'number'
  )
}

/**
 * The error of a call refused because an ioredis client is not connected, said as the
 * store's user needs it: where Redis was looked for and why it is not there, instead of
 * ioredis's "Stream isn't writeable and enableOfflineQueue options is false". `undefined`
 * for a connected client (the failure is Redis's own) and for other clients.
 *
 * @example
 * ```ts
 * disconnectedError(error, client)?.message
 * // 'redisStore: cannot reach Redis at 127.0.0.1:6379: connect ECONNREFUSED 127.0.0.1:6379'
 * ```
 */
export function disconnectedError(error: unknown, client: unknown): RedisStoreError | undefined {
  if (!isStandaloneIoRedis(client) || client.status === 'ready') return undefined
  const { host = 'localhost', port, path } = client.options
  const address = typeof path === 'string' && path !== '' ? path : `${host}:${port}`
  const cause = client.stream?.errored?.message
  const why =
    cause !== undefined
      ? `cannot reach Redis at ${address}: ${cause}`
      : client.status === 'end'
        ? `the client for Redis at ${address} was closed (quit or disconnect)`
        : `the client for Redis at ${address} is not connected (status '${client.status}')`
  return new RedisStoreError('ERR_SLUICE_REDIS', `redisStore: ${why}`, { cause: error })
}

export function messageOf(error: unknown): string {
  if (error instanceof RedisStoreError && error.cause !== undefined) return messageOf(error.cause)
  return error instanceof Error ? error.message : String(error)
}

/** Redis restarted or flushed its script cache: the script must be sent again. */
export function isNoScript(error: unknown): boolean {
  return messageOf(error).startsWith('NOSCRIPT')
}

/** A key of the call holds a value of another type (written by something else). */
export function isWrongType(error: unknown): boolean {
  return messageOf(error).startsWith('WRONGTYPE')
}

/**
 * A failure of this call's keys, not of the shard: TRYAGAIN (a multi-key call on a slot
 * being migrated, some keys moved or expired), also when the Cluster client gave up
 * retrying it, whose last error may then be the MOVED or ASK of a node it tried on the
 * way (ioredis retries a TRYAGAIN on a random node). The decision is answered by
 * `onError`; the store stays up.
 */
export function isKeyLevel(error: unknown): boolean {
  return /\bTRYAGAIN\b|^Too many Cluster redirections\. Last error: \w*: (?:MOVED|ASK) /.test(
    messageOf(error),
  )
}
