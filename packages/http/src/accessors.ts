import { isPromiseLike } from '@sluice/keyed/store'
import type { BulkheadInfo, Decision, RateLimitInfo } from './decision'
import type { Outcome, Refusal } from './engine'
import type { ProxyTexts, ProxyView } from './proxy-checks'

/**
 * How `@sluice/http` reads a framework's request. Each adapter supplies one object of
 * these functions, built once, so the HTTP logic never imports a framework and the
 * per-request path allocates nothing to look at a request.
 *
 * @example
 * ```ts
 * const nodeRequest: RequestAccessors<IncomingMessage> = {
 *   ip: (req) => req.socket.remoteAddress,
 *   method: (req) => req.method ?? 'GET',
 *   path: (req) => (req.url ?? '/').split('?')[0] ?? '/',
 *   route: () => undefined,
 *   header: (req, name) => {
 *     const value = req.headers[name]
 *     return Array.isArray(value) ? value.join(', ') : value
 *   },
 * }
 * ```
 */
export interface RequestAccessors<Req> {
  /**
   * The client address as the framework resolved it, honouring its proxy setting
   * (Express `req.ip` with `trust proxy`, Koa `ctx.ip` with `app.proxy`).
   */
  ip(req: Req): string | undefined
  /** The request method, upper case. */
  method(req: Req): string
  /** The request path, without the query string. */
  path(req: Req): string
  /** The matched route pattern (`/users/:id`) when the framework knows it at this point. */
  route(req: Req): string | undefined
  /** A request header by lower-case name; several values joined with `", "`. */
  header(req: Req, name: string): string | undefined
  /**
   * Optional: an object that lives as long as the request, where the pipeline marks what
   * it decided (a symbol-keyed property per middleware). Default: the request itself.
   * Give another when adding a property to the request is slow: Express swaps each
   * request's prototype, after which V8 builds a new hidden class for every property
   * added to it (about a microsecond); its adapter gives `res.locals`.
   */
  slot?(req: Req): object
  /**
   * Optional: how the framework trusts proxies, for the one-time warnings the `validate`
   * option switches (see {@link ProxySetup}). Without it `validate` names no check.
   */
  proxy?: ProxySetup<Req>
}

/**
 * A framework's proxy setup as the one-time warnings read it. Each warning is given at
 * most once per process, in the framework's own words; one without words is never given.
 *
 * @example
 * ```ts
 * const proxy: ProxySetup<Request> = {
 *   texts: { permissive: '…', untrusted: '…', noProxy: (n) => `…${n}…` },
 *   view: (req) => ({
 *     trusted: Boolean(req.app.get('trust proxy')),
 *     permissive: req.app.get('trust proxy') === true,
 *     forwarded: req.headers['x-forwarded-for'] !== undefined,
 *   }),
 * }
 * ```
 */
export interface ProxySetup<Req> {
  /**
   * The checks the `validate` option may name. Default `['xForwardedFor', 'trustProxy',
   * 'proxyHeader']`; `'clientAddress'` (no client address found) runs only where listed.
   */
  readonly checks?: readonly ProxyCheckName[]
  readonly texts: Partial<ProxyTexts>
  /**
   * One request's proxy setup; without it only `clientAddress` can be checked. Called per
   * request only while something is left to report: with proxies trusted, until a proxy
   * header came (100 requests at most); without, until one comes, which may be never. So
   * keep it cheap: read a setting that lives on the server once, not per request.
   */
  view?(req: Req): ProxyView
}

/** The names of the one-time checks, as the `validate` option switches them. */
export type ProxyCheckName = 'xForwardedFor' | 'trustProxy' | 'proxyHeader' | 'clientAddress'

/**
 * How `@sluice/http` writes to and watches a framework's response. Built once per
 * adapter, like {@link RequestAccessors}.
 *
 * @example
 * ```ts
 * const nodeResponse: ResponseAccessors<IncomingMessage, ServerResponse> = {
 *   getHeader: (res, name) => res.getHeader(name),
 *   setHeader: (res, name, value) => void res.setHeader(name, value),
 *   signal: (_req, res) => {
 *     const controller = new AbortController()
 *     res.once('close', () => controller.abort(new Error('client disconnected')))
 *     return controller.signal
 *   },
 * }
 * ```
 */
export interface ResponseAccessors<Req, Res> {
  /** The current value of a response header, if any. */
  getHeader(res: Res, name: string): number | string | readonly string[] | undefined
  /** Sets (replaces) a response header. */
  setHeader(res: Res, name: string, value: string): void
  /**
   * A signal that aborts when the client goes away. Called only when a request has to
   * wait (waiting mode, bulkhead queue), so the common path creates none.
   */
  signal(req: Req, res: Res): AbortSignal
  /**
   * The response's status once it is over: an adaptive bulkhead counts a 503 or 504 as a
   * request its downstream dropped. Optional: without it only a client that left counts.
   */
  status?(res: Res): number | undefined
}

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
