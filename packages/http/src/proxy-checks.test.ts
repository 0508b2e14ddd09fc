import { watchWarnings } from '@sluice/keyed/testing'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ProxySetup, ProxyView } from './accessors'
import { ProxyChecks, WATCHED_REQUESTS } from './proxy-checks'

/** A request as the fake framework below sees it: its setting and its proxy header. */
type Req = ProxyView

/** Counts how often the framework's view of a request is asked for. */
function framework(checks?: ProxySetup<Req>['checks']) {
  const asked = { views: 0 }
  const setup: ProxySetup<Req> = {
    ...(checks === undefined ? {} : { checks }),
    texts: {
      permissive: 'every hop trusted',
      untrusted: 'header without trust',
      noProxy: (n) => `no header in ${n}`,
      noAddress: 'no address',
    },
    view: (req) => {
      asked.views++
      return req
    },
  }
  return { asked, setup }
}

/** `n` requests through the checks as the engine runs them: `check` while `pending`. */
function serve(checks: ProxyChecks<Req>, req: Req, n: number): void {
  for (let i = 0; i < n; i++) if (checks.pending) checks.check(req)
}

const trusted: Req = { trusted: true, permissive: false, forwarded: false }
const trustedForwarded: Req = { trusted: true, permissive: false, forwarded: true }
const untrusted: Req = { trusted: false, permissive: false, forwarded: false }
const untrustedForwarded: Req = { trusted: false, permissive: false, forwarded: true }

describe('ProxyChecks: a request pays for a check only while it can still report', () => {
  let seen: ReturnType<typeof watchWarnings>
  beforeEach(() => {
    seen = watchWarnings()
  })
  afterEach(() => seen.stop())

  it('proxies trusted and a proxy header on the first request: one view, then nothing', () => {
    const { asked, setup } = framework()
    const checks = new ProxyChecks('rateLimit', undefined, setup)
    serve(checks, trustedForwarded, 1000)
    expect(asked.views).toBe(1)
    expect(checks.pending).toBe(false)
    expect(seen.given).toEqual([])
  })

  it('proxies trusted and no proxy header: watched for 100 requests, reported, then nothing', () => {
    const { asked, setup } = framework()
    const checks = new ProxyChecks('rateLimit', undefined, setup)
    serve(checks, trusted, 1000)
    expect(asked.views).toBe(WATCHED_REQUESTS)
    expect(checks.pending).toBe(false)
    expect(seen.given.map(([code]) => code)).toEqual(['ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY'])
  })

  it('proxies trusted with proxyHeader off: the first request settles everything', () => {
    const { asked, setup } = framework()
    const checks = new ProxyChecks('rateLimit', { proxyHeader: false }, setup)
    serve(checks, trusted, 1000)
    expect(asked.views).toBe(1)
    expect(checks.pending).toBe(false)
  })

  it('proxies not trusted: watched until a proxy header comes, reported once, then nothing', () => {
    const { asked, setup } = framework()
    const checks = new ProxyChecks('rateLimit', undefined, setup)
    serve(checks, untrusted, 500)
    expect(asked.views).toBe(500)
    expect(checks.pending).toBe(true)
    serve(checks, untrustedForwarded, 500)
    expect(asked.views).toBe(501)
    expect(checks.pending).toBe(false)
    expect(seen.given.map(([code]) => code)).toEqual(['ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'])
  })

  it('a watched client address keeps no request check pending', () => {
    const { asked, setup } = framework(['xForwardedFor', 'clientAddress'])
    const checks = new ProxyChecks('rateLimit', undefined, setup)
    expect(checks.watchesAddress).toBe(true)
    serve(checks, untrustedForwarded, 10)
    expect(asked.views).toBe(1)
    expect(checks.pending).toBe(false)
    checks.noAddress()
    checks.noAddress()
    expect(seen.given.map(([code]) => code)).toEqual([
      'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY',
      'ERR_SLUICE_NO_CLIENT_ADDRESS',
    ])
  })

  it('validate: false, or no view: nothing is ever pending', () => {
    const { setup } = framework()
    expect(new ProxyChecks('rateLimit', false, setup).pending).toBe(false)
    const { view: _, ...blind } = setup
    const checks = new ProxyChecks('rateLimit', undefined, blind)
    expect(checks.pending).toBe(false)
    expect(checks.watchesAddress).toBe(false)
  })
})
