/**
 * The answer on `Request`/`Response` runtimes (Hono on Bun, Deno, Cloudflare Workers, or
 * `app.request()` in a test), the twin of `@sluice/http/node`: `respond` carries out an
 * engine's outcome and follows the response until it is over. A handler's `Response` is
 * made long before its body is sent, so the response is followed through its body: read
 * to its end (finished), or cancelled (the client went away).
 *
 * @module
 */
import { isPromiseLike, type MaybePromise } from '@sluice/keyed/store'
import { type AnswerAccessors, expose, fail, refuse } from './answer'
import type { FollowedResponse, Outcome } from './engine'

/**
 * What `respond` needs of a fetch framework besides its {@link AnswerAccessors}: the
 * response the handler made, a way to replace it, and (on Workers) the execution
 * context's `waitUntil`.
 *
 * @example
 * ```ts
 * const hono: FetchAccessors<Context, Context, Next> = {
 *   ...honoAnswer,
 *   answered: (c) => c.res,
 *   replace: (c, _c, response) => void (c.res = response),
 *   waitUntil: (c, work) => c.executionCtx.waitUntil(work),
 * }
 * ```
 */
export interface FetchAccessors<Req, Res, Next> extends AnswerAccessors<Req, Res, Next> {
  /**
   * The handler's response once `next()` has settled, with anything it lost put back
   * (Hono: the headers sluice set, missing on a `Response` the handler built itself).
   */
  answered(req: Req, res: Res): Response | undefined
  /** Makes `response` the answer (the handler's, with its body followed). */
  replace(req: Req, res: Res, response: Response): void
  /**
   * Keeps work started after the response alive: a refund, a bulkhead release. On Workers,
   * the execution context's `waitUntil` (workerd drops what is left when a response ends).
   */
  waitUntil?(req: Req, work: Promise<unknown>): void
}

/**
 * Carries out an outcome of `engine.admit()` (or its promise) for one request: the
 * decision goes to the handler (`accessors.expose`); a refusal is sent or handed to
 * `onLimited`; a pass awaits `next()`, and when the outcome holds something (a bulkhead
 * slot, a refund) follows the work (until `next()` settles) and the response (until its
 * body has been read or cancelled, or the request's signal aborts); a failure goes to the
 * framework (`accessors.fail`). Post-response store calls go through `waitUntil`.
 *
 * @example
 * ```ts
 * async function rateLimit(c: Context, next: Next) {
 *   await respond(engine.admit(c, c), c, c, next, honoAccessors)
 * }
 * ```
 */
export async function respond<Req, Res, Next extends (...args: never[]) => unknown>(
  admitted: MaybePromise<Outcome>,
  req: Req,
  res: Res,
  next: Next,
  accessors: FetchAccessors<Req, Res, Next>,
): Promise<unknown> {
  let outcome: Outcome
  try {
    outcome = isPromiseLike(admitted) ? await admitted : admitted
  } catch (error) {
    if (!accessors.signal(req, res).aborted) return fail(accessors, error, req, res, next)
    return accessors.abandoned?.(req, res)
  }
  expose(accessors, req, outcome)
  if (outcome.action === 'refuse') {
    return refuse(accessors, outcome, req, res, next, (error) =>
      fail(accessors, error, req, res, next),
    )
  }
  if (!outcome.holds) {
    await next()
    accessors.answered(req, res)
    return undefined
  }
  const signal = accessors.signal(req, res)
  const { waitUntil } = accessors
  const body = new FollowedBody(
    outcome,
    waitUntil === undefined ? undefined : (work) => waitUntil(req, work),
  )
  outcome.follow(body)
  if (signal.aborted) {
    outcome.workDone(false)
    body.over(true)
    return accessors.abandoned?.(req, res)
  }
  signal.addEventListener('abort', body, { once: true })
  try {
    await next()
  } catch (error) {
    outcome.workDone(true)
    body.over(false)
    throw error
  }
  outcome.workDone(false)
  const response = accessors.answered(req, res)
  if (response === undefined) body.over(false)
  else accessors.replace(req, res, body.wrap(response))
  return undefined
}

/**
 * Follows one response through its body, for whoever watches it (`done(gone)` once):
 * read to its end (finished), or failed, cancelled by the runtime or destroyed (gone). The
 * wrapper pulls one chunk per read and never reads ahead, so the response is over once
 * the consumer has taken the last chunk. Also the request signal's listener: an abort
 * means the client left.
 */
class FollowedBody implements FollowedResponse {
  #over = false
  #destroyed: unknown
  #cut: ((reason: unknown) => void) | undefined

  constructor(
    private readonly watcher: { done(gone: boolean): void },
    private readonly keep: ((work: Promise<unknown>) => void) | undefined,
  ) {}

  over(gone: boolean): void {
    if (this.#over) return
    this.#over = true
    this.watcher.done(gone)
  }

  handleEvent(): void {
    this.over(true)
  }

  waitUntil(work: Promise<unknown>): void {
    this.keep?.(work)
  }

  /** Cuts the response off: its body fails where the client reads it. */
  destroy(): void {
    const reason = new Error('sluice: the response was destroyed (holdTimeout)')
    this.#destroyed = reason
    try {
      this.#cut?.(reason)
    } catch {
      // Workers refuse to touch one request's stream from another request's timer: the
      // slot is freed all the same, and the runtime ends the response.
    }
    this.over(true)
  }

  wrap(response: Response): Response {
    const source = response.body
    if (this.#destroyed !== undefined) {
      void source?.cancel(this.#destroyed)
      const reason = this.#destroyed
      return new Response(new ReadableStream({ pull: (c) => c.error(reason) }), response)
    }
    if (source === null) {
      this.over(false)
      return response
    }
    const reader = source.getReader()
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#cut = (reason) => {
            controller.error(reason)
            void reader.cancel(reason).catch(() => {})
          }
        },
        pull: async (controller) => {
          let chunk: Awaited<ReturnType<typeof reader.read>>
          try {
            chunk = await reader.read()
          } catch (error) {
            // A body that failed never reached its end: the response did not finish.
            this.over(true)
            controller.error(error)
            return
          }
          if (chunk.done) {
            this.over(false)
            controller.close()
          } else {
            controller.enqueue(chunk.value)
          }
        },
        cancel: (reason) => {
          this.over(true)
          return reader.cancel(reason)
        },
      },
      { highWaterMark: 0 },
    )
    return new Response(body, response)
  }
}

/**
 * Returns `res` with a body that calls `release` exactly once when the body has been read
 * to its end, cancelled (the client went away: the server cancels the stream) or failed;
 * at once when there is no body. `release` may be a function or an object with
 * `done(gone)`, which learns whether the body never reached its end. What `respond` does to hold a
 * bulkhead slot for a whole streamed response, for a middleware of your own.
 *
 * @example
 * ```ts
 * await next()
 * c.res = holdUntilSent(c.res, () => slot.release())
 * ```
 */
export function holdUntilSent(
  res: Response,
  release: (() => void) | { done(gone: boolean): void },
): Response {
  const watcher = typeof release === 'function' ? { done: () => release() } : release
  return new FollowedBody(watcher, undefined).wrap(res)
}
