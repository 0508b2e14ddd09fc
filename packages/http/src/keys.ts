import { readFunction, readInteger, readOptions, typeError } from '@sluice/core/validation'
import { isPromiseLike } from '@sluice/keyed/store'
import ipaddr from 'ipaddr.js'
import type { RequestAccessors } from './accessors'

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

/** A dotted quad already in canonical form: decimal, no leading zeros, each part ≤ 255. */
const CANONICAL_QUAD =
  /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/
const MAPPED_PREFIX = '::ffff:'
/** Four decimal parts, zero-padded or not (`203.000.113.009`). */
const DECIMAL_QUAD = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/
/** An IPv4 address (in any form) with a port: `203.0.113.7:5678`. */
const IPV4_WITH_PORT = /^([^:[\]]+):(\d{1,5})$/
/** A bracketed IPv6 address, with or without a port: `[2001:db8::1]:443`. */
const BRACKETED_IPV6 = /^\[([^\]]+)\](?::(\d{1,5}))?$/

/**
 * IPv6 prefixes whose last 32 bits are an IPv4 client's address, put there by a translator
 * in front of an IPv6-only service (SIIT-DC, NAT64 run in reverse, 464XLAT): every IPv4
 * client behind it arrives under one prefix, so grouping by /56 would give them all one
 * budget. Each is keyed as the IPv4 client it stands for.
 */
const IPV4_TRANSLATION_PREFIXES: readonly (readonly [ipaddr.IPv6, number])[] = [
  // RFC 6052 §2.1: the NAT64 well-known prefix, IPv4 address in the last 32 bits.
  [new ipaddr.IPv6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0]), 96],
  // RFC 8215: the local-use prefix; read with the RFC 6052 /96 layout (last 32 bits), the
  // one translators such as Jool and RFC 7755's SIIT-DC use by default.
  [new ipaddr.IPv6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0]), 48],
  // RFC 6145 §2.1: IPv4-translated addresses of SIIT, ::ffff:0:a.b.c.d.
  [new ipaddr.IPv6([0, 0, 0, 0, 0xffff, 0, 0, 0]), 96],
]
/** RFC 4291 §2.5.5.1: IPv4-compatible addresses (deprecated), ::a.b.c.d. */
const IPV4_COMPATIBLE = new ipaddr.IPv6([0, 0, 0, 0, 0, 0, 0, 0])

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
 * Turns a client address into its budget key, so that every spelling of one client gives
 * one key:
 *
 * - IPv4 as its canonical dotted quad. Other forms are read as `ipaddr.js` (and
 *   `inet_aton`) reads them: `0xcb.0.113.9`, `0313.0.113.9` (octal) and `3405803785` are
 *   all `203.0.113.9`; a zero-padded part that is not valid octal (`203.000.113.009`) can
 *   only be decimal and is read so.
 * - IPv6 that carries an IPv4 client as that IPv4 address: IPv4-mapped
 *   (`::ffff:203.0.113.7`), NAT64/SIIT translated (`64:ff9b::203.0.113.7`, the local-use
 *   `64:ff9b:1::/48`, `::ffff:0:203.0.113.7`) and IPv4-compatible (`::203.0.113.7`).
 * - Other IPv6 as its /`ipv6Subnet` network (`2001:db8:0:100::/56`).
 * - A port is dropped: `203.0.113.7:5678` and `[2001:db8::1]:443` are their addresses.
 *
 * An address that does not parse is used verbatim.
 *
 * @example
 * ```ts
 * addressKey('::ffff:203.0.113.7', 56) // '203.0.113.7'
 * addressKey('64:ff9b::cb00:7107', 56) // '203.0.113.7'
 * addressKey('203.0.113.7:5678', 56) // '203.0.113.7'
 * addressKey('2001:db8:0:1ff:1:2:3:4', 56) // '2001:db8:0:100::/56'
 * ```
 */
export function addressKey(address: string | undefined, ipv6Subnet = 56): string | undefined {
  if (address === undefined || address === '') return undefined
  // The common cases first, without parsing: a socket address is already canonical.
  if (CANONICAL_QUAD.test(address)) return address
  if (
    address.startsWith(MAPPED_PREFIX) &&
    CANONICAL_QUAD.test(address.slice(MAPPED_PREFIX.length))
  ) {
    return address.slice(MAPPED_PREFIX.length)
  }
  const parsed = parseAddress(address)
  if (parsed === undefined) return address
  if (parsed.kind() === 'ipv4') return parsed.toString()
  const v6 = parsed as ipaddr.IPv6
  // A past express-rate-limit CVE grouped every mapped IPv4 client under ::/56 together.
  const v4 = embeddedIPv4(v6)
  if (v4 !== undefined) return v4.toString()
  if (ipv6Subnet === 128) return v6.toString()
  const parts = v6.parts.slice()
  for (let i = 0; i < 8; i++) {
    const keep = Math.min(16, Math.max(0, ipv6Subnet - i * 16))
    parts[i] = (parts[i] ?? 0) & ((0xffff << (16 - keep)) & 0xffff)
  }
  return `${new ipaddr.IPv6(parts).toString()}/${ipv6Subnet}`
}

/** An address, or an address with a port, as ipaddr.js reads it; undefined if it is none. */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bracketed = BRACKETED_IPV6.exec(address)
  if (bracketed !== null) {
    const [, host = '', port] = bracketed
    return isPort(port) ? parseIPv6(host) : undefined
  }
  // IPv6 has at least two colons; IPv4 has none, or one before its port.
  const colon = address.indexOf(':')
  if (colon === -1) return parseIPv4(address)
  if (address.indexOf(':', colon + 1) !== -1) return parseIPv6(address)
  const withPort = IPV4_WITH_PORT.exec(address)
  return withPort !== null && isPort(withPort[2]) ? parseIPv4(withPort[1] ?? '') : undefined
}

function parseIPv6(address: string): ipaddr.IPv6 | undefined {
  try {
    return ipaddr.IPv6.parse(address)
  } catch {
    return undefined
  }
}

function isPort(port: string | undefined): boolean {
  return port === undefined || Number(port) <= 0xffff
}

/** IPv4 in any form ipaddr.js accepts, or four zero-padded decimal parts. */
function parseIPv4(address: string): ipaddr.IPv4 | undefined {
  if (ipaddr.IPv4.isValid(address)) return ipaddr.IPv4.parse(address)
  // ipaddr.js reads a leading zero as octal and so refuses `009`; decimal is its only reading.
  const quad = DECIMAL_QUAD.exec(address)
  if (quad === null) return undefined
  const octets = quad.slice(1).map(Number)
  return octets.every((octet) => octet <= 255) ? new ipaddr.IPv4(octets) : undefined
}

/** The IPv4 client an IPv6 address stands for, if it carries one. */
function embeddedIPv4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  // Every prefix below starts with 0000 or 0064: most addresses are ruled out by one compare.
  const first = v6.parts[0]
  if (first !== 0 && first !== 0x64) return undefined
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address()
  const high = v6.parts[6] ?? 0
  const low = v6.parts[7] ?? 0
  let translated = IPV4_TRANSLATION_PREFIXES.some(([prefix, bits]) => v6.match(prefix, bits))
  // ::/96 also holds :: and ::1; only an IPv4 address outside 0.0.0.0/8 is one embedded.
  if (!translated && high >= 0x100) translated = v6.match(IPV4_COMPATIBLE, 96)
  return translated ? new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]) : undefined
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
export function ip<Req = unknown>(given: IpKeyOptions<Req> = {}): KeyExtractor<Req> {
  const options = readOptions('keys.ip', given, ['ipv6Subnet', 'getIp'], {
    ipv6SubnetMask: 'use "ipv6Subnet"',
  })
  const ipv6Subnet =
    options.ipv6Subnet === undefined
      ? 56
      : readInteger('keys.ip', 'ipv6Subnet', options.ipv6Subnet, 1, 'an integer from 1 to 128', 128)
  const getIp = readFunction('keys.ip', 'getIp', options.getIp)
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
 * gets its own budget. Where the framework has not matched a route yet (Express and Koa
 * application-level middleware, `app.use`), the concrete path (`GET /users/42`) stands in
 * for the pattern, and every id gets a budget of its own: put the limiter on the route.
 *
 * @example
 * ```ts
 * const perRoute = rateLimit({ limit: 10, window: '1s', key: keys.compose(keys.route(), keys.ip()) })
 * app.get('/users/:id', perRoute, showUser) // one budget per client for every /users/:id
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
  checkExtractors('keys.compose', extractors)
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

/**
 * The first extractor that finds a key decides (for example an API key when the client
 * sends one, its address otherwise). Extractors run in order and stop at the first
 * non-empty key; while they answer synchronously the result is synchronous, and an
 * asynchronous one is awaited before the next runs. When none finds a key, the request
 * is counted under the shared {@link FALLBACK_KEY}.
 *
 * The key records which extractor found it (`0␟k-123`, `1␟203.0.113.7`, joined with the
 * control character {@link compose} uses), so a client cannot send a header whose value
 * is another client's address and spend that client's budget.
 *
 * @example
 * ```ts
 * // Per API key when one is sent, per client address (IPv6 grouped by /56) otherwise.
 * app.use(rateLimit({ limit: 1000, window: '1h', key: keys.first(keys.header('x-api-key'), keys.ip()) }))
 * ```
 */
export function first<Req = unknown>(...extractors: KeyExtractor<Req>[]): KeyExtractor<Req> {
  checkExtractors('keys.first', extractors)
  return function firstKey(req, http) {
    return firstFrom(extractors, 0, req, http)
  }
}

function firstFrom<Req>(
  extractors: readonly KeyExtractor<Req>[],
  start: number,
  req: Req,
  http: RequestAccessors<Req>,
): string | undefined | Promise<string | undefined> {
  for (let i = start; i < extractors.length; i++) {
    const key = (extractors[i] as KeyExtractor<Req>)(req, http)
    if (isPromiseLike(key)) {
      return key.then((found) =>
        found === undefined || found === ''
          ? firstFrom(extractors, i + 1, req, http)
          : `${i}${SEPARATOR}${found}`,
      )
    }
    if (key !== undefined && key !== '') return `${i}${SEPARATOR}${key}`
  }
  return undefined
}

function checkExtractors(factory: string, extractors: readonly unknown[]): void {
  if (extractors.length === 0) {
    throw new TypeError(`${factory}: needs at least one extractor, got none`)
  }
  extractors.forEach((extractor, i) => {
    if (typeof extractor !== 'function') {
      throw typeError(factory, `extractors[${i}]`, 'must be a function', extractor)
    }
  })
}
