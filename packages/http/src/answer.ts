import { isPromiseLike } from '@sluice/keyed/store'
import type { ResponseAccessors } from './accessors'
import type { BulkheadInfo, Decision, RateLimitInfo } from './decision'
import type { Outcome, Refusal } from './engine'

/**
 * What `respond` (of `@sluice/http/node` or `@sluice/http/fetch`) needs besides the
 * response accessors: how the framework sends a refusal, hands a decision to the
 * handler, calls the user's `onLimited` and reports a failure. `Next` is what the
 * framework passes a middleware to go on (Express `next`, Koa `next`, Fastify `done`).
 *
 * @example
 * ```ts
 * const answer: AnswerAccessors<Request, Response, NextFunction> = {
 *   ...expressResponse,
 *   send: (_req, res, status, { contentType, body }) => void res.status(status).type(contentType).send(body),
 *   expose: (req, name, value) => void (req[name] = value),
 *   limited: (onLimited, req, res, next, decision) => onLimited(req, res, next, decision),
 *   fail: (error, _req, _res, next) => next(error),
 * }
 * ```
 */
export interface AnswerAccessors<Req, Res, Next> extends ResponseAccessors<Req, Res> {
  /** Sends a refusal the framework's way, so its hooks and logs see it. */
  send(req: Req, res: Res, status: number, refusal: Refusal): unknown
  /**
   * Optional: hands what a middleware decided to the handler. Default: a property of the
   * request, `req.rateLimit` or `req.bulkhead` (Express, Fastify); Koa puts it on
   * `ctx.state`, Hono in `c.set()`.
   */
  expose?(req: Req, name: 'rateLimit' | 'bulkhead', value: RateLimitInfo | BulkheadInfo): void
  /** Calls the user's `onLimited` (opaque to sluice) with the framework's arguments. */
  limited(
    onLimited: (...args: never[]) => unknown,
    req: Req,
    res: Res,
    next: Next,
    decision: Decision,
  ): unknown
  /**
   * Optional: hands a failure to the framework's error handling. Default: `next(error)`
   * (Express, Fastify's `done`); Koa and Hono rethrow it.
   */
  fail?(error: unknown, req: Req, res: Res, next: Next): unknown
  /**
   * Optional: answers a request whose client left before it was answered (while it
   * waited), where the framework needs an answer all the same. Hono: a 499 response.
   */
  abandoned?(req: Req, res: Res): void
}

/** Gives the handler what the outcome decided, through `expose` or as a request property. */
export function expose<Req>(
  accessors: AnswerAccessors<Req, never, never>,
  req: Req,
  outcome: Outcome,
): void {
  const { info } = outcome
  if (info === undefined) return
  if (accessors.expose !== undefined) accessors.expose(req, outcome.exposes, info)
  else (req as Record<string, unknown>)[outcome.exposes] = info
}

/** Hands a failure to the framework: through `fail`, or as `next(error)`. */
export function fail<Req, Res, Next extends (...args: never[]) => unknown>(
  accessors: AnswerAccessors<Req, Res, Next>,
  error: unknown,
  req: Req,
  res: Res,
  next: Next,
): unknown {
  if (accessors.fail !== undefined) return accessors.fail(error, req, res, next)
  return (next as unknown as (error: unknown) => unknown)(error)
}

/**
 * Answers a refusal: the user's `onLimited` through `limited`, or the refusal's status and
 * body through `send`. A failure of either (sync or async: a throwing `message` or
 * `onLimited`) goes to `failure`. Returns what was answered, a promise while it is under way.
 */
export function refuse<Req, Res, Next>(
  accessors: AnswerAccessors<Req, Res, Next>,
  outcome: Outcome,
  req: Req,
  res: Res,
  next: Next,
  failure: (error: unknown) => unknown,
): unknown {
  try {
    let sent: unknown
    if (outcome.onLimited !== undefined) {
      sent = accessors.limited(outcome.onLimited, req, res, next, outcome.decision!)
    } else {
      const refusal = outcome.refusal()
      sent = isPromiseLike(refusal)
        ? Promise.resolve(refusal).then((r) => accessors.send(req, res, outcome.status, r))
        : accessors.send(req, res, outcome.status, refusal)
    }
    return isPromiseLike(sent) ? Promise.resolve(sent).then(undefined, failure) : sent
  } catch (error) {
    return failure(error)
  }
}
