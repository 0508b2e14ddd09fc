import { describe, expect, it } from 'vitest'
import type { RequestAccessors } from './accessors'
import { addressKey, compose, FALLBACK_KEY, first, global, header, ip, route } from './keys'

interface FakeRequest {
  ip?: string
  method?: string
  path?: string
  route?: string
  headers?: Record<string, string>
}

const http: RequestAccessors<FakeRequest> = {
  ip: (req) => req.ip,
  method: (req) => req.method ?? 'GET',
  path: (req) => req.path ?? '/',
  route: (req) => req.route,
  header: (req, name) => req.headers?.[name],
}

describe('addressKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::ffff:cb00:7107', '203.0.113.7'],
    ['0:0:0:0:0:ffff:cb00:7107', '203.0.113.7'],
    ['2001:db8:0:1ff:1:2:3:4', '2001:db8:0:100::/56'],
    ['2001:db8:0:100::', '2001:db8:0:100::/56'],
    ['2001:DB8:0:1AB::9', '2001:db8:0:100::/56'],
    ['::1', '::/56'],
    ['not an address', 'not an address'],
  ])('%s -> %s', (address, key) => {
    expect(addressKey(address)).toBe(key)
  })

  it('puts IPv4-mapped clients in separate buckets, not one shared ::/56 (the express-rate-limit CVE)', () => {
    expect(addressKey('::ffff:198.51.100.1')).not.toBe(addressKey('::ffff:198.51.100.2'))
  })

  it('groups by the subnet asked for', () => {
    expect(addressKey('2001:db8:1234:5678::1', 48)).toBe('2001:db8:1234::/48')
    expect(addressKey('2001:db8:1234:5678::1', 64)).toBe('2001:db8:1234:5678::/64')
    expect(addressKey('2001:db8:1234:5678::1', 60)).toBe('2001:db8:1234:5670::/60')
    expect(addressKey('2001:db8:1234:5678::1', 128)).toBe('2001:db8:1234:5678::1')
  })

  it.each([
    // Every inet_aton spelling ipaddr.js reads is one client, in canonical form.
    ['203.0.113.010', '203.0.113.8'], // a leading zero is octal, as ipaddr.js reads it
    ['0313.0.113.9', '203.0.113.9'],
    ['0xcb.0.113.9', '203.0.113.9'],
    ['0xcb007109', '203.0.113.9'],
    ['3405803785', '203.0.113.9'],
    ['203.0.29961', '203.0.117.9'],
    // Zero-padded parts that are no valid octal can only be decimal.
    ['203.000.113.009', '203.0.113.9'],
    ['::ffff:203.000.113.009', '203.0.113.9'], // ipaddr.js reads an embedded quad as decimal
    ['203.0.113.256', '203.0.113.256'],
  ])('IPv4 spelled %s is the key %s', (address, key) => {
    expect(addressKey(address)).toBe(key)
  })

  it.each([
    ['64:ff9b::203.0.113.9', '203.0.113.9'], // NAT64 well-known prefix (RFC 6052)
    ['64:ff9b::cb00:7109', '203.0.113.9'],
    ['64:ff9b:1::cb00:7109', '203.0.113.9'], // local-use prefix (RFC 8215), /96 layout
    ['64:ff9b:1:2:3::cb00:7109', '203.0.113.9'],
    ['::ffff:0:203.0.113.9', '203.0.113.9'], // SIIT IPv4-translated (RFC 6145)
    ['::ffff:0:cb00:7109', '203.0.113.9'],
    ['::cb00:7109', '203.0.113.9'], // IPv4-compatible (RFC 4291)
    ['::203.0.113.9', '203.0.113.9'],
    ['::1', '::/56'], // loopback and unspecified are no IPv4-compatible addresses
    ['::', '::/56'],
    ['64:ff9b:0:1::cb00:7109', '64:ff9b::/56'], // outside the /96: ordinary IPv6
  ])('IPv6 %s that carries an IPv4 client is the key %s', (address, key) => {
    expect(addressKey(address)).toBe(key)
  })

  it('gives every IPv4 client behind a NAT64/SIIT translator a budget of its own', () => {
    const behind = (v4: string) => [`64:ff9b::${v4}`, `64:ff9b:1::${v4}`, `::ffff:0:${v4}`]
    const a = behind('198.51.100.1').map((address) => addressKey(address))
    const b = behind('198.51.100.2').map((address) => addressKey(address))
    expect(a).toEqual(['198.51.100.1', '198.51.100.1', '198.51.100.1'])
    expect(b).toEqual(['198.51.100.2', '198.51.100.2', '198.51.100.2'])
  })

  it.each([
    ['1.2.3.4:5678', '1.2.3.4'],
    ['0x01020304:80', '1.2.3.4'],
    ['[2001:db8::1]:443', '2001:db8::/56'],
    ['[2001:db8::1]', '2001:db8::/56'],
    ['[::ffff:1.2.3.4]:443', '1.2.3.4'],
    ['[64:ff9b::1.2.3.4]:8080', '1.2.3.4'],
    ['1.2.3.4:65536', '1.2.3.4:65536'], // no port: verbatim
    ['[2001:db8::1]:70000', '[2001:db8::1]:70000'],
    ['example.com:80', 'example.com:80'],
  ])('drops the port of %s: %s', (address, key) => {
    expect(addressKey(address)).toBe(key)
  })

  it('keeps the port out of the key at every subnet', () => {
    expect(addressKey('[2001:db8:1234:5678::1]:443', 128)).toBe('2001:db8:1234:5678::1')
    expect(addressKey('203.0.113.7:1', 128)).toBe(addressKey('203.0.113.7:2', 128))
  })

  it('has no key for a missing address', () => {
    expect(addressKey(undefined)).toBeUndefined()
    expect(addressKey('')).toBeUndefined()
  })
})

describe('keys.ip', () => {
  it('reads the adapter address by default, grouped by /56', async () => {
    const key = ip<FakeRequest>()
    expect(await key({ ip: '2001:db8:0:1ff::1' }, http)).toBe('2001:db8:0:100::/56')
    expect(await key({ ip: '::ffff:10.0.0.1' }, http)).toBe('10.0.0.1')
  })

  it('takes a getIp override and a subnet', async () => {
    const key = ip<FakeRequest>({
      ipv6Subnet: 64,
      getIp: (req) => req.headers?.['cf-connecting-ip'],
    })
    const req = { ip: '10.0.0.1', headers: { 'cf-connecting-ip': '2001:db8:0:1:2::3' } }
    expect(await key(req, http)).toBe('2001:db8:0:1::/64')
  })

  it('reads its options as own properties: a polluted prototype picks no address', async () => {
    Object.defineProperty(Object.prototype, 'getIp', { value: () => '6.6.6.6', configurable: true })
    try {
      expect(await ip<FakeRequest>({})({ ip: '10.0.0.1' }, http)).toBe('10.0.0.1')
    } finally {
      delete (Object.prototype as { getIp?: unknown }).getIp
    }
  })

  it('validates its options', () => {
    expect(() => ip({ ipv6Subnet: 0 })).toThrow(
      new RangeError('keys.ip: "ipv6Subnet" must be an integer from 1 to 128, got 0'),
    )
    expect(() => ip({ ipv6Subnet: '56' as unknown as number })).toThrow(
      new TypeError('keys.ip: "ipv6Subnet" must be an integer from 1 to 128, got "56"'),
    )
    expect(() => ip({ getIp: 'x' as unknown as () => string })).toThrow(
      new TypeError('keys.ip: "getIp" must be a function, got "x"'),
    )
  })
})

describe('keys.header, route, global', () => {
  it('reads a header by case-insensitive name', async () => {
    const key = header<FakeRequest>('X-API-Key')
    expect(await key({ headers: { 'x-api-key': 'k1' } }, http)).toBe('k1')
    expect(await key({}, http)).toBeUndefined()
    expect(() => header('')).toThrow(
      new TypeError('keys.header: "name" must be a non-empty string, got ""'),
    )
  })

  it('keys by method and route pattern, or the path before a route matched', async () => {
    const key = route<FakeRequest>()
    expect(await key({ method: 'POST', route: '/users/:id', path: '/users/7' }, http)).toBe(
      'POST /users/:id',
    )
    expect(await key({ method: 'GET', path: '/users/7' }, http)).toBe('GET /users/7')
  })

  it('gives every request one key', async () => {
    expect(await global<FakeRequest>()({ ip: '1.1.1.1' }, http)).toBe('global')
  })
})

describe('keys.compose', () => {
  it('joins parts so that no part can forge another key', async () => {
    const key = compose<FakeRequest>(header('x-tenant'), ip())
    const a = await key({ ip: '10.0.0.1', headers: { 'x-tenant': 'acme' } }, http)
    const b = await key({ ip: '10.0.0.1', headers: { 'x-tenant': 'acme\u001f10.0.0.1' } }, http)
    expect(a).toBe('acme\u001f10.0.0.1')
    expect(await key({ ip: '10.0.0.2', headers: { 'x-tenant': 'acme' } }, http)).not.toBe(a)
    // Node refuses control characters in header values, so this request cannot arrive;
    // were it to, it would still not collide with the two-part key above.
    expect(b).not.toBe(a)
  })

  it('awaits asynchronous parts and falls back when every part is empty', async () => {
    const slow = async () => 'user-1'
    const key = compose<FakeRequest>(slow, ip())
    const pending = key({ ip: '10.0.0.1' }, http)
    expect(pending).toBeInstanceOf(Promise)
    expect(await pending).toBe('user-1\u001f10.0.0.1')
    expect(await compose<FakeRequest>(header('x-a'), header('x-b'))({}, http)).toBeUndefined()
    expect(FALLBACK_KEY).toBe('(no key)')
  })

  it('needs at least one function', () => {
    expect(() => compose()).toThrow(
      new TypeError('keys.compose: needs at least one extractor, got none'),
    )
    expect(() => compose(1 as never)).toThrow(
      new TypeError('keys.compose: "extractors[0]" must be a function, got 1'),
    )
  })
})

describe('keys.first', () => {
  const apiKeyOrIp = first<FakeRequest>(header('x-api-key'), ip())

  it('takes the first extractor that finds a key, tagged with its position', () => {
    expect(apiKeyOrIp({ ip: '10.0.0.1', headers: { 'x-api-key': 'k1' } }, http)).toBe('0\u001fk1')
    expect(apiKeyOrIp({ ip: '10.0.0.1' }, http)).toBe('1\u001f10.0.0.1')
    expect(apiKeyOrIp({ ip: '10.0.0.1', headers: { 'x-api-key': '' } }, http)).toBe(
      '1\u001f10.0.0.1',
    )
  })

  it('keeps the IPv6 /56 grouping that `req.get(...) ?? req.ip` loses', () => {
    expect(apiKeyOrIp({ ip: '2001:db8::1' }, http)).toBe(apiKeyOrIp({ ip: '2001:db8::2' }, http))
  })

  it("never lets a header value name another client's address budget", () => {
    const victim = apiKeyOrIp({ ip: '203.0.113.7' }, http)
    const attacker = apiKeyOrIp(
      { ip: '198.51.100.1', headers: { 'x-api-key': '203.0.113.7' } },
      http,
    )
    expect(attacker).not.toBe(victim)
  })

  it('stays synchronous while every extractor it runs is, and stops at the first key', () => {
    const calls: string[] = []
    const spy = (name: string, key: string | undefined) => (): string | undefined => {
      calls.push(name)
      return key
    }
    const key = first<FakeRequest>(spy('a', undefined), spy('b', 'B'), spy('c', 'C'))({}, http)
    expect(key).toBe('1\u001fB')
    expect(calls).toEqual(['a', 'b'])
  })

  it('awaits an asynchronous extractor before trying the next', async () => {
    const calls: string[] = []
    const none = async () => {
      calls.push('async')
      return undefined
    }
    const key = first<FakeRequest>(none, header('x-api-key'), ip())
    const pending = key({ ip: '10.0.0.1' }, http)
    expect(pending).toBeInstanceOf(Promise)
    expect(await pending).toBe('2\u001f10.0.0.1')
    expect(calls).toEqual(['async'])
    const found = first<FakeRequest>(async () => 'user-1', ip())({ ip: '10.0.0.1' }, http)
    expect(await found).toBe('0\u001fuser-1')
  })

  it('comes back empty when no extractor finds a key, so the fallback key counts it', async () => {
    expect(first<FakeRequest>(header('x-a'), header('x-b'))({}, http)).toBeUndefined()
    expect(await first<FakeRequest>(async () => '', header('x-b'))({}, http)).toBeUndefined()
  })

  it('needs at least one function', () => {
    expect(() => first()).toThrow(
      new TypeError('keys.first: needs at least one extractor, got none'),
    )
    expect(() => first(header('x'), 'ip' as never)).toThrow(
      new TypeError('keys.first: "extractors[1]" must be a function, got "ip"'),
    )
  })
})
