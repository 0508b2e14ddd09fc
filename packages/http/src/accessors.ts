// Types only, importing nothing of this package: the engines, the key and header code and
// the proxy checks all read them, and a file here that imported one of those back would
// close a cycle.

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

/** What a framework says of one request's proxy setup. */
export interface ProxyView {
  /** The framework trusts a proxy (Express `trust proxy`, Koa `app.proxy`). */
  readonly trusted: boolean
  /** It trusts every hop, so the client-written leftmost address wins. */
  readonly permissive: boolean
  /** The request carries the proxy header (`X-Forwarded-For`, or Koa's `proxyIpHeader`). */
  readonly forwarded: boolean
}

/** The framework's own words for the warnings, naming its settings. */
export interface ProxyTexts {
  /** `ERR_SLUICE_PERMISSIVE_TRUST_PROXY`: every hop is trusted. */
  readonly permissive: string
  /** `ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY`: a proxy header arrived while proxies are not trusted. */
  readonly untrusted: string
  /** `ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY`: proxies are trusted, but no proxy header came. */
  readonly noProxy: (watched: number) => string
  /** `ERR_SLUICE_NO_CLIENT_ADDRESS`: the framework found no client address. */
  readonly noAddress: string
}
