import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Clock, concurrency, systemClock, tokenBucket } from '@sluice/core'

/** What the fake partner saw. */
export interface PartnerStats {
  /** Requests answered 200. */
  served: number
  /** Requests refused with 429 for breaking the rate contract. */
  limited: number
  /** Requests refused with 503 for breaking the concurrency contract. */
  overloaded: number
  /** Most requests the partner ever had in flight at once. */
  peakInFlight: number
}

export interface PartnerApi {
  /** Base URL, e.g. `http://127.0.0.1:54321`. */
  readonly url: string
  readonly stats: PartnerStats
  close(): Promise<void>
}

export interface PartnerApiOptions {
  /** How long each request takes to answer. Default 2500 ms. */
  latencyMs?: number
  /** Default `systemClock`; tests pass a `ManualClock`. */
  clock?: Clock
}

/**
 * A local stand-in for a partner API whose published contract is "at most 2 requests a
 * second (bursts of 2) and at most 4 in flight". Like a real partner it answers 429 or
 * 503 when a client breaks the contract, and it counts every breach.
 *
 * @example
 * ```ts
 * const partner = await startPartnerApi({ latencyMs: 200 })
 * await fetch(`${partner.url}/orders/42`)
 * await partner.close()
 * ```
 */
export async function startPartnerApi(options: PartnerApiOptions = {}): Promise<PartnerApi> {
  const clock = options.clock ?? systemClock
  const latencyMs = options.latencyMs ?? 2500
  const rate = tokenBucket({ limit: 2, window: '1s', capacity: 2, clock, name: 'partner-rate' })
  const slots = concurrency({ max: 4, clock, name: 'partner-slots' })
  const stats: PartnerStats = { served: 0, limited: 0, overloaded: 0, peakInFlight: 0 }

  const server = createServer(async (request, response) => {
    const match = /^\/orders\/([\w-]+)$/.exec(request.url ?? '')
    if (request.method !== 'GET' || match === null) {
      response.writeHead(404).end()
      return
    }
    if (!rate.tryAcquire()) {
      stats.limited++
      response.writeHead(429, { 'retry-after': String(Math.ceil(rate.retryAfterMs() / 1000)) })
      response.end()
      return
    }
    const permit = slots.tryEnter()
    if (permit === undefined) {
      stats.overloaded++
      response.writeHead(503).end()
      return
    }
    stats.peakInFlight = Math.max(stats.peakInFlight, slots.inFlight)
    try {
      await clock.sleep(latencyMs)
      stats.served++
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ id: match[1], status: 'shipped' }))
    } finally {
      permit.release()
    }
  })

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()))
        server.closeAllConnections()
      }),
  }
}
