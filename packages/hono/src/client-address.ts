import type { IncomingMessage, ServerResponse } from 'node:http'
import { headerOf } from '@sluice/http/node'
import type { Context } from 'hono'

/**
 * Reads a request's client address. Hono runs on many runtimes and each knows the peer
 * differently; the default finds it on Node, Bun, Deno and Cloudflare Workers. Pass your
 * own behind a reverse proxy, or on another runtime (see the README).
 *
 * @example
 * ```ts
 * // Behind one proxy that appends the address it saw to X-Forwarded-For.
 * const getIp: GetIp = (c) => c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim()
 * ```
 */
export type GetIp = (c: Context) => string | undefined

type ConnInfo = (c: Context) => { remote: { address?: string | undefined } }

interface NodeBindings {
  incoming: IncomingMessage & { headers: Record<string, string | string[] | undefined> }
  outgoing: ServerResponse
}

/**
 * The `{ incoming, outgoing }` bindings `@hono/node-server` passes as `c.env` (or as
 * `c.env.server`, where its `getConnInfo` also looks), or undefined on other runtimes.
 */
export function nodeBindings(c: Context): NodeBindings | undefined {
  const env = c.env as (Partial<NodeBindings> & { server?: Partial<NodeBindings> }) | undefined
  const bindings = env?.server ?? env
  return typeof bindings?.incoming?.socket === 'object' &&
    typeof bindings.outgoing?.once === 'function'
    ? (bindings as NodeBindings)
    : undefined
}

/**
 * A request header, read from Node's parsed headers under `@hono/node-server`: going
 * through `c.req.header()` there builds the Fetch request's headers, which costs more than
 * the rest of a rate-limit decision.
 */
export function rawHeader(c: Context, name: string): string | undefined {
  const headers = nodeBindings(c)?.incoming?.headers
  return headers === undefined ? c.req.header(name) : headerOf(headers, name)
}

/**
 * True inside Cloudflare Workers (workerd), whose user agent (on `navigator`) says so. There
 * `c.env` holds the Worker's bindings, not the connection, and the edge tells the client
 * address in a header instead.
 */
export function onWorkers(): boolean {
  const host = globalThis as { navigator?: { userAgent?: unknown } }
  return host.navigator?.userAgent === 'Cloudflare-Workers'
}

/**
 * The second argument of the runtime's fetch handler, which Hono passes as `c.env`: Bun's
 * `Server` (`Bun.serve`), Deno's `ServeHandlerInfo` (`Deno.serve`). Hono's `hono/bun` also
 * accepts `{ server }`.
 */
interface ServeInfo {
  /** Bun: the peer of a request's connection. */
  requestIP?: (request: Request) => { address?: string } | null
  /** Deno: the peer of the connection. */
  remoteAddr?: { hostname?: unknown }
  server?: ServeInfo
}

/** `getConnInfo` of `@hono/node-server` once loaded; null when it could not be loaded. */
let nodeConnInfo: ConnInfo | null | undefined
let loading: Promise<void> | undefined

async function loadNodeConnInfo(): Promise<void> {
  try {
    // An optional peer dependency, loaded only once a request served by @hono/node-server
    // arrives: Bun, Deno and Workers users need not install it, and a bundler that cannot
    // resolve it (inside try) warns instead of failing the build.
    const { getConnInfo } = await import('@hono/node-server/conninfo')
    nodeConnInfo = getConnInfo
  } catch {
    nodeConnInfo = null
  }
}

/**
 * Undefined once the default address reader is ready for this request; otherwise a
 * promise to await first (only the first request under `@hono/node-server` waits).
 */
export function defaultIpReady(c: Context): Promise<void> | undefined {
  if (nodeConnInfo !== undefined || nodeBindings(c) === undefined) return undefined
  loading ??= loadNodeConnInfo()
  return loading
}

/**
 * The default `getIp`: the peer of the connection as the runtime reports it, or
 * undefined when it reports none (a test's `app.request()`, an unknown runtime).
 *
 * - Node: the socket's peer, from `@hono/node-server`'s `getConnInfo`.
 * - Bun: `server.requestIP(request)`, what `getConnInfo` of `hono/bun` reads.
 * - Deno: `info.remoteAddr.hostname`, what `getConnInfo` of `hono/deno` reads.
 * - Cloudflare Workers: the `cf-connecting-ip` header. Cloudflare's edge sets it on every
 *   request and overwrites any a client sent; it is read only inside workerd, since
 *   anywhere else a client could send it.
 */
export function defaultIp(c: Context): string | undefined {
  if (nodeBindings(c) !== undefined) return nodeConnInfo?.(c).remote.address
  if (onWorkers()) return c.req.header('cf-connecting-ip')
  const env = c.env as ServeInfo | undefined
  const server = env?.server ?? env
  if (typeof server?.requestIP === 'function') return server.requestIP(c.req.raw)?.address
  const hostname = env?.remoteAddr?.hostname
  return typeof hostname === 'string' ? hostname : undefined
}
