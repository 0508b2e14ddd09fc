import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Context } from 'hono'

/**
 * Reads a request's client address. Hono runs on many runtimes and each knows the peer
 * differently, so the adapter takes it as a function (see the README for each runtime).
 *
 * @example
 * ```ts
 * import { getConnInfo } from 'hono/bun'
 * const getIp: GetIp = (c) => getConnInfo(c).remote.address
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
  if (headers === undefined) return c.req.header(name)
  const value = headers[name]
  return Array.isArray(value) ? value.join(', ') : value
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
 * The default `getIp`: the socket's peer address from `@hono/node-server`'s
 * `getConnInfo`; undefined on other runtimes, which must pass their own `getIp`.
 */
export function defaultIp(c: Context): string | undefined {
  if (nodeConnInfo == null || nodeBindings(c) === undefined) return undefined
  return nodeConnInfo(c).remote.address
}
