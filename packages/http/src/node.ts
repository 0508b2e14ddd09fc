/**
 * The Node HTTP binding every adapter on `node:http` shares (Express, Koa, Fastify, Hono on
 * `@hono/node-server`): when a response is over, whether its client is gone, and an abort
 * signal for a request that waits. It only calls methods on the objects it is given, so
 * it imports nothing at run time.
 *
 * A response is over when it has finished (fully handed to the OS), when it closed early
 * (the client went away), or when its socket closed: a request pipelined behind another
 * on an HTTP/1.1 connection gets neither `finish` nor `close` if the client hangs up
 * before its turn, and only the socket says so.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/**
 * Told once when the response is over; `gone` when it ended before it finished. An
 * {@link Outcome} is one, so an adapter hands it over as is, with no closure per request.
 */
export interface ResponseWatcher {
  done(gone: boolean): void
}

const PENDING = Symbol('sluice.pendingResponses')

/**
 * Per socket, the responses being watched and who watches each. Kept on the socket (one
 * property per connection) rather than on each response: Express swaps every response's
 * prototype, after which adding a property to it costs V8 a new hidden class (about a
 * microsecond).
 */
type WatchedSocket = Socket & { [PENDING]?: Map<ServerResponse, ResponseWatcher[]> }

function fire(res: ServerResponse, gone: boolean): void {
  const socket = res.req?.socket as WatchedSocket | null | undefined
  const pending = socket?.[PENDING]
  const watchers = pending?.get(res)
  if (watchers === undefined) return
  pending!.delete(res)
  for (const watcher of watchers) watcher.done(gone)
}

// Shared listeners (called with `this` = the emitter): no closure per request.
function onFinish(this: ServerResponse): void {
  fire(this, false)
}

function onClose(this: ServerResponse): void {
  fire(this, !this.writableFinished)
}

function onSocketClose(this: WatchedSocket): void {
  const pending = this[PENDING]
  if (pending === undefined) return
  delete this[PENDING]
  for (const [res, watchers] of pending) {
    const gone = !res.writableFinished
    for (const watcher of watchers) watcher.done(gone)
  }
}

/**
 * Calls `watcher.done(gone)` exactly once when the response is over: `gone` is false once
 * it has finished, true when the client left first (the response closed early, or its
 * socket closed while it was still queued behind a pipelined request). A response is
 * detached from its socket as soon as it finishes, so a keep-alive connection collects
 * nothing. If the client is already gone, `done(true)` runs at once.
 *
 * @example
 * ```ts
 * const outcome = await engine.admit(req, res)
 * if (outcome.holds) whenResponseOver(req, res, outcome)
 * ```
 */
export function whenResponseOver(
  req: IncomingMessage,
  res: ServerResponse,
  watcher: ResponseWatcher,
): void {
  if (res.writableFinished) {
    watcher.done(false)
    return
  }
  const socket = req.socket as WatchedSocket | null
  if (socket === null || socket.destroyed) {
    watcher.done(true)
    return
  }
  let pending = socket[PENDING]
  if (pending === undefined) {
    pending = new Map()
    socket[PENDING] = pending
    socket.once('close', onSocketClose)
  }
  const watchers = pending.get(res)
  if (watchers !== undefined) {
    watchers.push(watcher)
    return
  }
  pending.set(res, [watcher])
  res.on('finish', onFinish)
  res.on('close', onClose)
}

/**
 * True once the client can no longer receive this response: its socket is gone and the
 * response did not finish.
 *
 * @example
 * ```ts
 * if (isClientGone(req, res)) return // nobody to answer
 * ```
 */
export function isClientGone(req: IncomingMessage, res: ServerResponse): boolean {
  return (req.socket === null || req.socket.destroyed) && !res.writableFinished
}

/** Why a waiting request's signal aborts: its client went away. */
export function clientGone(): Error {
  const error = new Error('sluice: the client disconnected while the request was waiting')
  error.name = 'AbortError'
  return error
}

/**
 * A signal that aborts when the client goes away before the response finished (including
 * a pipelined request whose connection closed). Made only for requests that have to wait.
 *
 * @example
 * ```ts
 * await clock.sleep(delay, requestSignal(req, res))
 * ```
 */
export function requestSignal(req: IncomingMessage, res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  whenResponseOver(req, res, {
    done: (gone) => {
      if (gone) controller.abort(clientGone())
    },
  })
  return controller.signal
}
