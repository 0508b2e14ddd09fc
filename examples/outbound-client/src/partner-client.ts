import {
  bulkheaded,
  type Clock,
  type ConcurrencyLimiter,
  concurrency,
  leakyBucket,
  type RateLimiter,
  rateLimited,
  systemClock,
} from '@sluice/core'

export interface Order {
  id: string
  status: string
}

export interface PartnerClientOptions {
  /** The partner's base URL. */
  baseUrl: string
  /** Default `systemClock`; tests pass a `ManualClock`. */
  clock?: Clock
}

/** A client for the partner API that keeps to its contract by construction. */
export interface PartnerClient {
  getOrder(id: string): Promise<Order>
  /** The pacing limiter: 2 per second, one every 500 ms. */
  readonly pace: RateLimiter
  /** The bulkhead: at most 4 calls in flight. */
  readonly inFlight: ConcurrencyLimiter
}

/**
 * Builds a partner client whose `getOrder` is paced at 2 per second and never has more
 * than 4 calls in flight. Callers just `await client.getOrder(id)`: a burst of calls
 * queues instead of failing, and the partner never sees a breach.
 *
 * @example
 * ```ts
 * const client = createPartnerClient({ baseUrl: 'https://partner.example' })
 * const orders = await Promise.all(ids.map((id) => client.getOrder(id)))
 * ```
 */
export function createPartnerClient({
  baseUrl,
  clock = systemClock,
}: PartnerClientOptions): PartnerClient {
  // A leaky bucket, not a token bucket: the partner allows 2 a second, and a client that
  // idled should not then fire a burst at it.
  const pace = leakyBucket({ limit: 2, window: '1s', clock, name: 'partner-pace' })
  const inFlight = concurrency({ max: 4, maxQueue: 10_000, clock, name: 'partner-in-flight' })

  class HttpPartnerClient implements PartnerClient {
    readonly pace = pace
    readonly inFlight = inFlight

    // The bulkhead is the outer decorator, so a call takes its slot first and is paced
    // at the moment it is sent. Pacing first would let calls that waited for a slot go
    // out together when slots free up at once.
    @bulkheaded(inFlight, { wait: '10m' })
    @rateLimited(pace, { wait: '10m' })
    async getOrder(id: string): Promise<Order> {
      const response = await fetch(new URL(`/orders/${encodeURIComponent(id)}`, baseUrl))
      if (!response.ok) throw new Error(`partner answered ${response.status} for order ${id}`)
      return (await response.json()) as Order
    }
  }

  return new HttpPartnerClient()
}
