/**
 * The Node HTTP answer every adapter on `node:http` shares (Express, Koa, Fastify, Hono on
 * `@hono/node-server`): `respond` carries out an engine's outcome (headers are already
 * set; status and body or `onLimited`; errors to the framework) and follows the response
 * until it is over, for refunds and bulkhead releases. It only calls methods on the
 * objects it is given, so it imports nothing from Node at run time.
 *
 * A response is over when it has finished (fully handed to the OS), when it closed early
 * (the client went away, or it was destroyed), or when its socket closed: a request
 * pipelined behind another on an HTTP/1.1 connection gets neither `finish` nor `close` if
 * the client hangs up before its turn, and only the socket says so. Only a `finish` counts
 * as finished: Node reports `writableFinished` for a destroyed response that was ended
 * afterwards (Express's error handler does that), which never reached its client.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { isPromiseLike, type MaybePromise } from '@sluice/keyed/store'
import { type AnswerAccessors, expose, fail, refuse } from './answer'
import { clientGone, type Outcome } from './engine'

export { clientGone }

/**
 * What `respond` needs of a Node framework besides its {@link AnswerAccessors}: the Node
 * request and response behind its own objects.
 *
 * @example
 * ```ts
 * const koa: NodeAccessors<Context, Context, Next> = {
 *   ...koaAnswer,
 *   incoming: (ctx) => ctx.req,
 *   outgoing: (ctx) => ctx.res,
 * }
 * ```
 */
export interface NodeAccessors<Req, Res, Next> extends AnswerAccessors<Req, Res, Next> {
  incoming(req: Req): IncomingMessage
  outgoing(res: Res): ServerResponse
}

/**
 * Carries out an outcome of `engine.admit()` (or its promise) for one request, the way
 * tRPC's `nodeHTTPRequestHandler` owns an answer:
 *
 * - the decision goes to the handler (`accessors.expose`);
 * - a refusal is sent (`accessors.send`), or handed to the user's `onLimited`;
 * - a pass calls `next()`; when the outcome holds something (a bulkhead slot, a refund),
 *   the response is followed until it is over, and the work until it is over: until the
 *   promise `next()` returns settles (Koa, a decorated method), or else until the handler
 *   ends the response (Express), also after its client left;
 * - a failure (a store, a callback, `message`, `onLimited`, sync or async) goes to the
 *   framework (`accessors.fail`), unless the client is already gone.
 *
 * Returns what `next()` or `onLimited` returned (a promise for Koa to await), or a
 * promise of the answer when the outcome was a promise.
 *
 * @example
 * ```ts
 * function rateLimit(req: Request, res: Response, next: NextFunction) {
 *   respond(engine.admit(req, res), req, res, next, expressAccessors)
 * }
 * ```
 */
export function respond<Req, Res, Next extends (...args: never[]) => unknown>(
  admitted: MaybePromise<Outcome>,
  req: Req,
  res: Res,
  next: Next,
  accessors: NodeAccessors<Req, Res, Next>,
): unknown {
  if (!isPromiseLike(admitted)) return answer(admitted, req, res, next, accessors)
  return Promise.resolve(admitted).then(
    (outcome) => answer(outcome, req, res, next, accessors),
    (error: unknown) => failed(error, req, res, next, accessors),
  )
}

function answer<Req, Res, Next extends (...args: never[]) => unknown>(
  outcome: Outcome,
  req: Req,
  res: Res,
  next: Next,
  accessors: NodeAccessors<Req, Res, Next>,
): unknown {
  expose(accessors, req, outcome)
  if (outcome.action === 'refuse') {
    return refuse(accessors, outcome, req, res, next, (error) =>
      failed(error, req, res, next, accessors),
    )
  }
  if (!outcome.holds) return next()
  const incoming = accessors.incoming(req)
  const outgoing = accessors.outgoing(res)
  outcome.follow(outgoing)
  if (isClientGone(incoming, outgoing)) {
    // It left while the request waited: no handler runs, nobody is there to answer.
    outcome.workDone(false)
    outcome.done(true)
    return accessors.abandoned?.(req, res)
  }
  const work = next()
  // Watched once the handler has started: whatever it did synchronously is seen below.
  whenResponseOver(incoming, outgoing, outcome, !isPromiseLike(work))
  if (!isPromiseLike(work)) return work
  return Promise.resolve(work).then(
    () => outcome.workDone(false),
    (error: unknown) => {
      outcome.workDone(true)
      throw error
    },
  )
}

function failed<Req, Res, Next extends (...args: never[]) => unknown>(
  error: unknown,
  req: Req,
  res: Res,
  next: Next,
  accessors: NodeAccessors<Req, Res, Next>,
): unknown {
  if (isClientGone(accessors.incoming(req), accessors.outgoing(res))) {
    return accessors.abandoned?.(req, res)
  }
  return fail(accessors, error, req, res, next)
}

/**
 * Told once when the response is over (`gone` when it never finished), and, for a
 * watcher that asks, when the handler has ended the response. An {@link Outcome} is one,
 * so it is handed over as is, with no closure per request.
 */
export interface ResponseWatcher {
  done(gone: boolean): void
  workDone?(failed: boolean): void
}

const PENDING = Symbol('sluice.pendingResponses')

/** The watchers of one response. */
class Watch {
  readonly watchers: ResponseWatcher[] = []
  /** Those whose work ends when the handler ends the response (no promise tells them). */
  workers: ResponseWatcher[] | undefined

  constructor(watcher: ResponseWatcher, endsWork: boolean) {
    this.add(watcher, endsWork)
  }

  add(watcher: ResponseWatcher, endsWork: boolean): void {
    this.watchers.push(watcher)
    if (!endsWork) return
    if (this.workers === undefined) this.workers = [watcher]
    else this.workers.push(watcher)
  }
}

/**
 * Per socket, the responses being watched. Kept on the socket (one property per
 * connection) rather than on each response: Express swaps every response's prototype,
 * after which adding a property to it costs V8 a new hidden class (about a microsecond).
 */
type WatchedSocket = Socket & { [PENDING]?: Map<ServerResponse, Watch> }

/** Responses whose client left before the handler ended them: waiting for that end. */
const unended = new WeakMap<ServerResponse, ResponseWatcher[]>()

function over(res: ServerResponse, watch: Watch, gone: boolean): void {
  const { workers } = watch
  if (workers !== undefined) {
    if (!gone || res.writableEnded) workDone(workers)
    else awaitEnd(res, workers)
  }
  for (const watcher of watch.watchers) watcher.done(gone)
}

function workDone(watchers: readonly ResponseWatcher[]): void {
  for (const watcher of watchers) watcher.workDone?.(false)
}

/**
 * The client left while the handler still works: its work is over when it ends the
 * response anyway (Express's handlers do, and so does its error handler), seen by
 * wrapping this one response's `end`. A handler that never ends it holds its slot until
 * `holdTimeout`.
 */
function awaitEnd(res: ServerResponse, watchers: ResponseWatcher[]): void {
  const waiting = unended.get(res)
  if (waiting !== undefined) {
    waiting.push(...watchers)
    return
  }
  unended.set(res, [...watchers])
  const own = Object.hasOwn(res, 'end')
  const end = res.end
  res.end = function ended(this: ServerResponse, ...args: unknown[]) {
    if (own) res.end = end
    else delete (res as { end?: unknown }).end
    handlerDone(res)
    return (end as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as ServerResponse['end']
}

function fire(res: ServerResponse, gone: boolean): void {
  const socket = res.req?.socket as WatchedSocket | null | undefined
  const pending = socket?.[PENDING]
  const watch = pending?.get(res)
  if (watch === undefined) return
  pending!.delete(res)
  over(res, watch, gone)
}

// Shared listeners (called with `this` = the emitter): no closure per request.
function onFinish(this: ServerResponse): void {
  fire(this, false)
}

function onClose(this: ServerResponse): void {
  // After 'finish' the response is no longer pending: a close that still finds it means
  // the response never finished, whatever writableFinished says.
  fire(this, true)
}

function onSocketClose(this: WatchedSocket): void {
  const pending = this[PENDING]
  if (pending === undefined) return
  delete this[PENDING]
  for (const [res, watch] of pending) over(res, watch, true)
}

/**
 * Calls `watcher.done(gone)` exactly once when the response is over: `gone` is false once
 * it has finished, true when it never will (the client left, the response was destroyed,
 * or its socket closed while it was still queued behind a pipelined request). With
 * `endsWork`, `watcher.workDone(false)` comes first, once the handler has ended the
 * response (at once if it already has, or later, should it end it after its client left).
 * A response is detached from its socket as soon as it finishes, so a keep-alive
 * connection collects nothing. If the response is already over, the calls come at once.
 *
 * @example
 * ```ts
 * whenResponseOver(req, res, { done: (gone) => console.log(gone ? 'abandoned' : 'sent') })
 * ```
 */
export function whenResponseOver(
  req: IncomingMessage,
  res: ServerResponse,
  watcher: ResponseWatcher,
  endsWork = false,
): void {
  const socket = req.socket as WatchedSocket | null
  if (res.destroyed || socket === null || socket.destroyed) {
    over(res, new Watch(watcher, endsWork), !res.writableFinished || res.destroyed)
    return
  }
  if (res.writableFinished) {
    over(res, new Watch(watcher, endsWork), false)
    return
  }
  let pending = socket[PENDING]
  if (pending === undefined) {
    pending = new Map()
    socket[PENDING] = pending
    socket.once('close', onSocketClose)
  }
  const watch = pending.get(res)
  if (watch !== undefined) {
    watch.add(watcher, endsWork)
    return
  }
  pending.set(res, new Watch(watcher, endsWork))
  res.on('finish', onFinish)
  res.on('close', onClose)
}

/**
 * Tells the watchers of a response that its handler is done, for a framework that knows
 * it without a promise from `next()` (Fastify reports its route handlers on a tracing
 * channel). Their slots are freed once the response is over too, or at once if it is.
 *
 * @example
 * ```ts
 * diagnostics.subscribe('tracing:fastify.request.handler:asyncEnd', ({ reply }) => handlerDone(reply.raw))
 * ```
 */
export function handlerDone(res: ServerResponse): void {
  const waiting = unended.get(res)
  if (waiting !== undefined) {
    unended.delete(res)
    workDone(waiting)
  }
  const socket = res.req?.socket as WatchedSocket | null | undefined
  const watch = socket?.[PENDING]?.get(res)
  if (watch?.workers !== undefined) workDone(watch.workers)
}

/**
 * A request header of Node's parsed headers by lower-case name, several values joined
 * with `", "`: what `RequestAccessors.header` answers.
 *
 * @example
 * ```ts
 * header: (req, name) => headerOf(req.headers, name)
 * ```
 */
export function headerOf(headers: IncomingMessage['headers'], name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value.join(', ') : value
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
