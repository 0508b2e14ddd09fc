import type { RedisClient } from './client'

/** The part of an ioredis `Redis` or `Cluster` that reports its connection. */
interface Evented {
  readonly status: string
  on(event: string, listener: () => void): unknown
  off(event: string, listener: () => void): unknown
}

function asEvented(client: RedisClient): Evented | undefined {
  if (typeof client !== 'object' || client === null) return undefined
  const evented = client as Partial<Evented>
  return typeof evented.status === 'string' &&
    typeof evented.on === 'function' &&
    typeof evented.off === 'function'
    ? (evented as Evented)
    : undefined
}

/** What the store needs to know of a client's connection. */
export interface Connection {
  /**
   * While the client is still connecting, a promise that settles once it is ready (or
   * gave up); otherwise `undefined`. A client that has not connected yet is not an outage:
   * with `enableOfflineQueue: false` ioredis refuses every command until it is ready, so
   * a call made then waits for the connection (bounded by `timeout`) instead of failing.
   */
  connecting(): Promise<void> | undefined
  /** True once the client was closed for good (`quit`): probing it would be pointless. */
  ended(): boolean
}

const always: Connection = { connecting: () => undefined, ended: () => false }

/** The connection of an ioredis client; other clients report nothing. */
export function connectionOf(client: RedisClient): Connection {
  const evented = asEvented(client)
  if (evented === undefined) return always
  let waiting: Promise<void> | undefined
  return {
    connecting() {
      const { status } = evented
      if (status !== 'connecting' && status !== 'connect') return undefined
      waiting ??= new Promise<void>((resolve) => {
        const events = ['ready', 'close', 'end']
        const settle = () => {
          for (const event of events) evented.off(event, settle)
          waiting = undefined
          resolve()
        }
        for (const event of events) evented.on(event, settle)
      })
      return waiting
    },
    ended: () => evented.status === 'end',
  }
}
