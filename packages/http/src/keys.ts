import ipaddr from 'ipaddr.js'
import type { RequestAccessors } from './accessors'
import { describe, rangeError, typeError } from './validate'

/**
 * Finds the budget a request is counted against. Receives the framework's request and
 * the adapter's {@link RequestAccessors}; a user-written extractor can ignore the second
 * argument. An empty or missing key is counted under {@link FALLBACK_KEY}, never skipped.
 *
 * @example
 * ```ts
 * const byUser: KeyExtractor<{ user?: { id: string } }> = (req) => req.user?.id
 * ```
 */
export type KeyExtractor<Req = unknown> = (
  req: Req,
  http: RequestAccessors<Req>,
) => string | undefined | Promise<string | undefined>

/**
 * The one key that every request whose extractor came back empty shares. Such requests
 * are limited together rather than let through: an empty key must never be a bypass.
 */
export const FALLBACK_KEY = '(no key)'

/**
 * Separates the parts of a composed key. Control characters cannot occur in header
 * values (Node's parser rejects them), addresses or routes, so one client cannot craft a
 * part that makes its composed key equal to another client's.
 */
const SEPARATOR = '\u001f'

const DOTTED_QUAD = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/
const MAPPED_PREFIX = '::ffff:'

/** Options of {@link ip}. */
export interface IpKeyOptions<Req = unknown> {
  /**
   * IPv6 clients are grouped by this prefix length, because one subscriber usually holds
   * a whole /56 (or /48) and can rotate through its addresses at will. 128 disables grouping.
   * Default 56.
   */
  ipv6Subnet?: number
  /**
   * Reads the client address instead of the adapter's proxy-aware default (for example
   * from a trusted `CF-Connecting-IP` header).
   */
  getIp?: (req: Req) => string | undefined
}

/**
 * Turns a client address into its budget key: IPv4 as is, IPv4-mapped IPv6
 * (`::ffff:203.0.113.7`) as the IPv4 address it stands for, other IPv6 as its /`subnet`
 * network (`2001:db8:0:100::/56`). An address that does not parse is used verbatim.
 *
 * @example
 * ```ts
 * addressKey('::ffff:203.0.113.7', 56) // '203.0.113.7'
 * addressKey('2001:db8:0:1ff:1:2:3:4', 56) // '2001:db8:0:100::/56'
 * ```
 */
export function addressKey(address: string | undefined, ipv6Subnet = 56): string | undefined {
  if (address === undefined || address === '') return undefined
  if (DOTTED_QUAD.test(address)) return address
  if (address.startsWith(MAPPED_PREFIX) && DOTTED_QUAD.test(address.slice(MAPPED_PREFIX.length))) {
    return address.slice(MAPPED_PREFIX.length)
  }
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(address)
  } catch {
    return address
  }
  if (parsed.kind() === 'ipv4') return parsed.toString()
  const v6 = parsed as ipaddr.IPv6
  // A past express-rate-limit CVE grouped every mapped IPv4 client under ::/56 together.
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString()
  if (ipv6Subnet === 128) return v6.toString()
  const parts = v6.parts.slice()
  for (let i = 0; i < 8; i++) {
    const keep = Math.min(16, Math.max(0, ipv6Subnet - i * 16))
    parts[i] = (parts[i] ?? 0) & ((0xffff << (16 - keep)) & 0xffff)
  }
  return `${new ipaddr.IPv6(parts).toString()}/${ipv6Subnet}`
}

/**
 * Keys requests by client address (the default key). IPv4-mapped IPv6 counts as the IPv4
 * client it is; other IPv6 addresses are grouped by `ipv6Subnet` (default /56). The
 * address comes from the adapter (proxy-aware: Express `req.ip` with `trust proxy`) or from
 * `getIp` when given.
 *
 * @example
 * ```ts
 * app.use(rateLimit({ limit: 100, window: '1m', key: keys.ip({ ipv6Subnet: 48 }) }))
 * ```
 */
export function ip<Req = unknown>(options: IpKeyOptions<Req> = {}): KeyExtractor<Req> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`keys.ip: options must be an object, got ${describe(options)}`)
  }
  const { ipv6Subnet = 56, getIp } = options
  if (typeof ipv6Subnet !== 'number') {
    throw typeError('keys.ip', 'ipv6Subnet', 'must be an integer from 1 to 128', ipv6Subnet)
  }
  if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128) {
    throw rangeError('keys.ip', 'ipv6Subnet', 'must be an integer from 1 to 128', ipv6Subnet)
  }
  if (getIp !== undefined && typeof getIp !== 'function') {
    throw typeError('keys.ip', 'getIp', 'must be a function', getIp)
  }
  if (getIp !== undefined) {
    return function ipKey(req) {
      return addressKey(getIp(req), ipv6Subnet)
    }
  }
  return function ipKey(req, http) {
    return addressKey(http.ip(req), ipv6Subnet)
  }
}

/**
 * Keys requests by the value of one request header (an API key, a tenant id). A missing
 * header falls back to the shared {@link FALLBACK_KEY}.
 *
 * @example
 * ```ts
 * app.use(rateLimit({ limit: 1000, window: '1h', key: keys.header('x-api-key') }))
 * ```
 */
export function header<Req = unknown>(name: string): KeyExtractor<Req> {
  if (typeof name !== 'string' || name === '') {
    throw typeError('keys.header', 'name', 'must be a non-empty string', name)
  }
  const lower = name.toLowerCase()
  return function headerKey(req, http) {
    return http.header(req, lower)
  }
}

/**
 * Keys requests by method and matched route pattern (`GET /users/:id`), so every route
 * gets its own budget. Where the framework has not matched a route yet (application-level
 * middleware), the request path stands in for the pattern.
 *
 * @example
 * ```ts
 * app.use(rateLimit({ limit: 10, window: '1s', key: keys.compose(keys.ip(), keys.route()) }))
 * ```
 */
export function route<Req = unknown>(): KeyExtractor<Req> {
  return function routeKey(req, http) {
    return `${http.method(req)} ${http.route(req) ?? http.path(req)}`
  }
}

/** The key every request shares under {@link global}. */
export const GLOBAL_KEY = 'global'

/**
 * One budget for every request: a limit on the whole service (or route), not per client.
 *
 * @example
 * ```ts
 * app.use(rateLimit({ limit: 5000, window: '1s', key: keys.global() }))
 * ```
 */
export function global<Req = unknown>(): KeyExtractor<Req> {
  return function globalKey() {
    return GLOBAL_KEY
  }
}

/**
 * Combines extractors into one key (for example client and route). The parts are joined
 * with a control character no part can contain; a key whose parts all come back empty
 * falls back to the shared {@link FALLBACK_KEY}.
 *
 * @example
 * ```ts
 * const perClientPerRoute = keys.compose(keys.ip(), keys.route())
 * ```
 */
export function compose<Req = unknown>(...extractors: KeyExtractor<Req>[]): KeyExtractor<Req> {
  if (extractors.length === 0) {
    throw new TypeError('keys.compose: needs at least one extractor, got none')
  }
  extractors.forEach((extractor, i) => {
    if (typeof extractor !== 'function') {
      throw typeError('keys.compose', `extractors[${i}]`, 'must be a function', extractor)
    }
  })
  return function composedKey(req, http) {
    const parts: (string | undefined | Promise<string | undefined>)[] = []
    let pending = false
    for (const extractor of extractors) {
      const part = extractor(req, http)
      if (typeof part === 'object' && part !== null) pending = true
      parts.push(part)
    }
    return pending ? Promise.all(parts).then(joinParts) : joinParts(parts as (string | undefined)[])
  }
}

function joinParts(parts: readonly (string | undefined)[]): string | undefined {
  let empty = true
  for (const part of parts) if (part !== undefined && part !== '') empty = false
  return empty ? undefined : parts.map((part) => part ?? '').join(SEPARATOR)
}
