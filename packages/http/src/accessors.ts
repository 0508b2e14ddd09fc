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
}

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
