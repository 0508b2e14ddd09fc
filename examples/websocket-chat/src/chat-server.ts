import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import {
  type KeyedLimiter,
  type KeyedResult,
  keyedLimiter,
  memoryStore,
  type PolicyOptions,
  type Store,
} from '@sluice/keyed'
import { type RawData, type WebSocket, WebSocketServer } from 'ws'

/** What a client sends: a chat message with an id of its choosing, answered by that id. */
export interface ClientFrame {
  id: number
  text: string
}

/** What the server sends. */
export type ServerFrame =
  /** Someone else's message. */
  | { type: 'message'; from: string; text: string }
  /** Your message `id` was delivered to everyone else. */
  | { type: 'ack'; id: number }
  /** Your message `id` was dropped: over `limit`; try again in `retryAfterMs`. */
  | { type: 'error'; id: number; code: 'rate_limited'; limit: string; retryAfterMs: number }
  /** A frame that is not a `ClientFrame`; dropped. */
  | { type: 'error'; id: null; code: 'bad_frame' }

/** Options of {@link startChatServer}; every one has a default. */
export interface ChatServerOptions {
  /** Default 0: a free port. */
  port?: number
  /** Where both budgets live. Default: a `memoryStore()`; share a `redisStore()` across servers. */
  store?: Store
  /**
   * Messages one connection may send. Default: bursts of 5, then one a second (a token
   * bucket), so one socket cannot flood the room.
   */
  perConnection?: PolicyOptions
  /**
   * Messages one user may send over all their connections (tabs, devices). Default: 30 a
   * minute in any rolling minute (a sliding window), so opening more sockets buys nothing.
   */
  perUser?: PolicyOptions
}

/** A running chat server. */
export interface ChatServer {
  /** `ws://127.0.0.1:<port>`; connect with `?user=<name>`. */
  readonly url: string
  readonly perConnection: KeyedLimiter
  readonly perUser: KeyedLimiter
  /**
   * Ends every connection and stops listening; resolves once the connections' budgets are
   * deleted, so the store is no longer used (its client can be closed then).
   */
  close(): Promise<void>
}

/**
 * A chat room over WebSocket (`ws`) in which every message is charged to its connection
 * and to its user. A message over either limit is **dropped**: nobody else receives it,
 * and the sender gets an error frame naming the limit and when to try again. Messages of
 * one connection are handled one at a time, in the order sent.
 *
 * The user comes from the `user` query parameter: a stand-in for the session a real app
 * would check in `verifyClient` or on the HTTP upgrade.
 *
 * @example
 * ```ts
 * const chat = await startChatServer({ port: 8080 })
 * // ws://127.0.0.1:8080/?user=ann
 * ```
 */
export async function startChatServer(options: ChatServerOptions = {}): Promise<ChatServer> {
  const store = options.store ?? memoryStore()
  const perConnection = keyedLimiter({
    name: 'messages-per-connection',
    algorithm: 'token-bucket',
    limit: 1,
    window: '1s',
    capacity: 5,
    ...options.perConnection,
    store,
  })
  const perUser = keyedLimiter({
    name: 'messages-per-user',
    limit: 30,
    window: '1m',
    ...options.perUser,
    store,
  })

  const wss = new WebSocketServer({
    port: options.port ?? 0,
    host: '127.0.0.1',
    maxPayload: 16_384,
  })
  await once(wss, 'listening')

  /** Charges one message to its connection and its user, or to neither. */
  async function admit(connection: string, user: string): Promise<KeyedResult> {
    const byConnection = await perConnection.consume(connection)
    if (!byConnection.allowed) return byConnection
    const byUser = await perUser.consume(`user:${user}`)
    // Refused by the user's budget: the connection's permit goes back, so a message
    // dropped for one limit does not count against the other.
    if (!byUser.allowed) await perConnection.refund(byConnection.receipt!)
    return byUser
  }

  async function handle(socket: WebSocket, connection: string, user: string, data: RawData) {
    const frame = parseFrame(data)
    if (frame === undefined) return send(socket, { type: 'error', id: null, code: 'bad_frame' })
    const decision = await admit(connection, user)
    if (!decision.allowed) {
      return send(socket, {
        type: 'error',
        id: frame.id,
        code: 'rate_limited',
        limit: decision.policy,
        retryAfterMs: decision.retryAfterMs,
      })
    }
    for (const other of wss.clients) {
      if (other !== socket && other.readyState === other.OPEN) {
        send(other, { type: 'message', from: user, text: frame.text })
      }
    }
    send(socket, { type: 'ack', id: frame.id })
  }

  /**
   * Per open connection: done once it has closed and its budget is deleted. `close()`
   * waits for these, so nothing is sent to the store once it has resolved (its caller may
   * then close the store's client).
   */
  const forgetting = new Set<Promise<void>>()

  wss.on('connection', (socket, request) => {
    const user = new URL(request.url ?? '/', 'ws://localhost').searchParams.get('user')
    if (user === null || user === '') {
      socket.close(1008, 'a "user" query parameter is required')
      return
    }
    // Unique across servers, so connections of two servers sharing a store never share a budget.
    const connection = `connection:${randomUUID()}`
    let turn: Promise<void> = Promise.resolve()
    socket.on('message', (data) => {
      turn = turn
        .then(() => handle(socket, connection, user, data))
        // A store that throws: end the connection rather than leave the message unanswered.
        .catch(() => socket.close(1011, 'internal error'))
    })
    // Nothing to keep once the connection is gone and its last message answered; the
    // user's budget stays. A delete the store fails leaves the bucket to expire on its own.
    const forgotten = new Promise<void>((resolve) => socket.once('close', () => resolve()))
      .then(() => turn)
      .then(() => perConnection.delete(connection))
      .catch(() => undefined)
      .finally(() => forgetting.delete(forgotten))
    forgetting.add(forgotten)
  })

  const { port } = wss.address() as AddressInfo
  return {
    url: `ws://127.0.0.1:${port}`,
    perConnection,
    perUser,
    close: async () => {
      for (const client of wss.clients) client.terminate()
      await new Promise<void>((resolve, reject) =>
        wss.close((error) => (error ? reject(error) : resolve())),
      )
      await Promise.all(forgetting)
    },
  }
}

function parseFrame(data: RawData): ClientFrame | undefined {
  try {
    const frame = JSON.parse(data.toString()) as Partial<ClientFrame>
    return Number.isSafeInteger(frame.id) && typeof frame.text === 'string'
      ? { id: frame.id!, text: frame.text }
      : undefined
  } catch {
    return undefined
  }
}

function send(socket: WebSocket, frame: ServerFrame): void {
  socket.send(JSON.stringify(frame))
}
