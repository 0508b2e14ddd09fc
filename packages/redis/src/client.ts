/**
 * Sends one Redis command and resolves with its raw reply. `key` is the first key the
 * command touches (undefined for keyless commands such as PING), for callers that must
 * route by key themselves, e.g. a node-redis cluster.
 *
 * @example
 * const send: SendCommand = (args, key) => cluster.sendCommand(key, false, args)
 */
export type SendCommand = (args: string[], key: string | undefined) => Promise<unknown>

/** The part of an ioredis `Redis` or `Cluster` client the store uses. */
export interface IoRedisLike {
  call(command: string, ...args: string[]): Promise<unknown>
}

/** The part of a node-redis (v4 or later) client the store uses. */
export interface NodeRedisLike {
  sendCommand(args: string[]): Promise<unknown>
}

/** An ioredis client (standalone or Cluster), a node-redis client, or a `SendCommand`. */
export type RedisClient = IoRedisLike | NodeRedisLike | SendCommand

/**
 * Turns any supported client into one `SendCommand`. ioredis is recognised by `call`
 * (checked first: ioredis also has a `sendCommand`, with another signature), node-redis by
 * `sendCommand`.
 *
 * @example
 * const send = toSendCommand(new Redis())
 * await send(['PING'], undefined) // 'PONG'
 */
export function toSendCommand(client: RedisClient): SendCommand {
  if (typeof client === 'function') return client
  if (client !== null && typeof client === 'object') {
    if ('call' in client && typeof client.call === 'function') {
      const io = client
      return ([command, ...args]) => io.call(command ?? '', ...args)
    }
    if ('sendCommand' in client && typeof client.sendCommand === 'function') {
      const node = client
      return (args) => node.sendCommand(args)
    }
  }
  throw new TypeError(
    `redisStore: "client" must be an ioredis client, a node-redis client or a sendCommand(args) function, got ${describe(client)}`,
  )
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'object') return `an object without call() or sendCommand()`
  return typeof value === 'string' ? JSON.stringify(value) : String(value)
}
