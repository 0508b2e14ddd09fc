import type { Decision } from '@sluice/http'
import type { RequestAccessors } from '@sluice/http/adapter'
import { headerOf, type NodeAccessors, requestSignal } from '@sluice/http/node'
import type { NextFunction, Request, Response } from 'express'

/** What `onLimited` is called with in Express. */
export type OnLimited = (
  req: Request,
  res: Response,
  next: NextFunction,
  decision: Decision,
) => unknown

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
  header: (req, name) => headerOf(req.headers, name),
  // Express swaps every request's prototype, after which V8 makes a new hidden class for
  // each property added to it (about 1 µs a property); res.locals, a dictionary made per
  // request, takes a symbol-keyed mark for a fraction of that.
  slot: (req) => req.res?.locals ?? req,
  proxy: {
    texts: {
      permissive:
        "Express's `trust proxy` is true, so req.ip is the leftmost X-Forwarded-For address, which any client can set: every request can pick its own rate-limit key. Set `trust proxy` to the number of proxies in front of the app, or to their addresses.",
      untrusted:
        "An X-Forwarded-For header arrived while Express's `trust proxy` is off: if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Set `trust proxy` (e.g. app.set('trust proxy', 1)); the header is ignored until then.",
      noProxy: (watched) =>
        `Express's \`trust proxy\` is on, but none of the first ${watched} requests carried X-Forwarded-For: if no proxy is in front of the app, any client can send that header and choose its own rate-limit key. Turn \`trust proxy\` off, or check that the proxy sets the header.`,
    },
    view: (req) => {
      const setting: unknown = req.app.get('trust proxy')
      return {
        trusted: Boolean(setting),
        permissive: setting === true,
        forwarded: req.headers['x-forwarded-for'] !== undefined,
      }
    },
  },
}

/** How `@sluice/http/node` writes to, answers and watches an Express response. */
export const expressResponse: NodeAccessors<Request, Response, NextFunction> = {
  getHeader: (res, name) => res.getHeader(name),
  setHeader: (res, name, value) => {
    res.setHeader(name, value)
  },
  signal: requestSignal,
  status: (res) => res.statusCode,
  incoming: (req) => req,
  outgoing: (res) => res,
  send: (_req, res, status, { contentType, body }) => {
    res.status(status).set('Content-Type', contentType).send(body)
  },
  limited: (onLimited, req, res, next, decision) =>
    (onLimited as OnLimited)(req, res, next, decision),
}
