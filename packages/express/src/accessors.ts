import {
  isPromiseLike,
  type Outcome,
  type Refusal,
  type RequestAccessors,
  type ResponseAccessors,
} from '@sluice/http/adapter'
import { isClientGone, requestSignal, whenResponseOver } from '@sluice/http/node'
import type { NextFunction, Request, Response } from 'express'

/**
 * How `@sluice/http` reads an Express request: `req.ip` is proxy-aware (it honours the
 * `trust proxy` setting); the route pattern is known once a route has matched.
 */
export const expressRequest: RequestAccessors<Request> = {
  ip: (req) => req.ip,
  method: (req) => req.method,
  path: (req) => req.baseUrl + req.path,
  route: (req) => {
    const path: unknown = req.route?.path
    return path === undefined ? undefined : `${req.baseUrl}${String(path)}`
  },
  header: (req, name) => {
    const value = req.headers[name]
    return Array.isArray(value) ? value.join(', ') : value
  },
  // Express swaps every request's prototype, after which V8 makes a new hidden class for
  // each property added to it (about 1 µs a property); res.locals, a dictionary made per
  // request, takes a symbol-keyed mark for a fraction of that.
  slot: (req) => req.res?.locals ?? req,
}

/** How `@sluice/http` writes to and watches an Express response. */
export const expressResponse: ResponseAccessors<Request, Response> = {
  getHeader: (res, name) => res.getHeader(name),
  setHeader: (res, name, value) => {
    res.setHeader(name, value)
  },
  signal: requestSignal,
  status: (res) => res.statusCode,
}

function send(res: Response, status: number, refusal: Refusal): void {
  res.status(status).set('Content-Type', refusal.contentType).send(refusal.body)
}

/**
 * Carries out an outcome in Express: the next handler for a pass (with the response
 * watched when the outcome holds something), `onLimited` or the prepared refusal.
 * `proceed` replaces `next()` for a decorated method.
 */
export function answer<D>(
  req: Request,
  res: Response,
  next: NextFunction,
  outcome: Outcome,
  onLimited:
    | ((req: Request, res: Response, next: NextFunction, decision: D) => unknown)
    | undefined,
  proceed: (() => void) | undefined,
): void {
  if (outcome.action === 'refuse') {
    if (onLimited !== undefined) {
      const handled = onLimited(req, res, next, outcome.decision as D)
      if (isPromiseLike(handled)) Promise.resolve(handled).then(undefined, next)
      return
    }
    const refusal = outcome.refusal()
    if (isPromiseLike(refusal))
      Promise.resolve(refusal).then((r) => send(res, outcome.status, r), next)
    else send(res, outcome.status, refusal)
    return
  }
  if (outcome.holds) {
    whenResponseOver(req, res, outcome)
    // A client that left while the request waited: its slot is already free, nobody to answer.
    if (isClientGone(req, res)) return
  }
  if (proceed === undefined) next()
  else proceed()
}

/** A failure with a client still there goes to Express's error handling. */
export function fail(req: Request, res: Response, next: NextFunction, error: unknown): void {
  if (!isClientGone(req, res)) next(error)
}
