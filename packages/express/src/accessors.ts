import type { RequestAccessors, ResponseAccessors } from '@sluice/http'
import type { Request, Response } from 'express'

/** Why a waiting request's signal aborts: its client went away. */
export function clientGone(): Error {
  const error = new Error('sluice: the client disconnected while the request was waiting')
  error.name = 'AbortError'
  return error
}

/** True once the client can no longer receive this response. */
export function isGone(req: Request, res: Response): boolean {
  return req.socket?.destroyed === true && !res.writableFinished
}

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
}

/** How `@sluice/http` writes to and watches an Express response. */
export const expressResponse: ResponseAccessors<Request, Response> = {
  getHeader: (res, name) => res.getHeader(name),
  setHeader: (res, name, value) => {
    res.setHeader(name, value)
  },
  signal: (req, res) => {
    const controller = new AbortController()
    if (isGone(req, res)) {
      controller.abort(clientGone())
      return controller.signal
    }
    res.once('close', () => {
      if (!res.writableFinished) controller.abort(clientGone())
    })
    return controller.signal
  },
}

/** Sends a refusal body: text as `text/plain`, an object as JSON. */
export function sendBody(res: Response, body: unknown): void {
  if (typeof body === 'string') res.type('text/plain').send(body)
  else res.json(body)
}
