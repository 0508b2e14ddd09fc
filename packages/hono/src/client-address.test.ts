import { ManualClock } from '@sluice/core'
import { memoryStore } from '@sluice/http'
import { Hono } from 'hono'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { rateLimit } from './rate-limit'

// What each runtime's fetch handler receives as its second argument, which Hono passes as
// `c.env`. The runtimes themselves run the shared scenarios in test/{bun,deno,workerd}.test.ts.
const bun = (address: string) => ({
  requestIP: (request: Request) => {
    expect(request).toBeInstanceOf(Request)
    return { address, family: 'IPv4', port: 50_000 }
  },
})
const deno = (hostname: string) => ({
  remoteAddr: { transport: 'tcp', hostname, port: 50_000 },
  completed: Promise.resolve(),
})

function limited() {
  const clock = new ManualClock()
  return new Hono().get(
    '/',
    rateLimit({ limit: 1, window: '1m', clock, store: memoryStore({ clock }) }),
    (c) => c.json({ key: c.get('rateLimit')?.key }),
  )
}

const keyOf = async (res: Response | Promise<Response>) =>
  ((await (await res).json()) as { key: string }).key

afterEach(() => {
  vi.unstubAllGlobals()
  vi.restoreAllMocks()
})

describe('default client address per runtime', () => {
  it("Bun: the server's requestIP(request), as Bun.serve passes the server", async () => {
    const app = limited()
    expect(await keyOf(app.request('/', {}, bun('203.0.113.9')))).toBe('203.0.113.9')
    expect((await app.request('/', {}, bun('203.0.113.9'))).status).toBe(429)
    expect(await keyOf(app.request('/', {}, { server: bun('203.0.113.10') }))).toBe('203.0.113.10')
  })

  it("Deno: the connection's remoteAddr, as Deno.serve passes it", async () => {
    const app = limited()
    expect(await keyOf(app.request('/', {}, deno('2001:db8:0:1ff::1')))).toBe('2001:db8:0:100::/56')
    expect((await app.request('/', {}, deno('2001:db8:0:100::2'))).status).toBe(429)
  })

  it('Workers: cf-connecting-ip, read only inside workerd', async () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const app = limited()
    // Outside Cloudflare anyone can send the header: it is not an address there.
    const spoofed = { headers: { 'cf-connecting-ip': '198.51.100.7' } }
    expect(await keyOf(app.request('/', spoofed, {}))).toBe('(no key)')
    vi.stubGlobal('navigator', { userAgent: 'Cloudflare-Workers' })
    const from = (address: string) => ({
      headers: { 'cf-connecting-ip': address, 'x-forwarded-for': address },
    })
    expect(await keyOf(app.request('/', from('198.51.100.7'), { MY_KV: {} }))).toBe('198.51.100.7')
    expect((await app.request('/', from('198.51.100.7'), {})).status).toBe(429)
    const codes = spy.mock.calls.map(([, options]) => (options as { code: string }).code)
    // The edge's X-Forwarded-For is no sign of a misconfigured proxy there.
    expect(codes).not.toContain('ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY')
  })
})
