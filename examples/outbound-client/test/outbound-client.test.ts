import { ManualClock } from '@sluice/core'
import { afterEach, describe, expect, it } from 'vitest'
import { type PartnerApi, startPartnerApi } from '../src/partner-api'
import { createPartnerClient, type Order } from '../src/partner-client'

let partner: PartnerApi | undefined
afterEach(async () => {
  await partner?.close()
  partner = undefined
})

/**
 * Moves the shared ManualClock in 10 ms steps until `work` settles, letting real socket
 * I/O run between steps. Nothing here measures real time: the limiters and the partner's
 * latency all run on the ManualClock.
 */
async function drive<T>(clock: ManualClock, work: Promise<T>): Promise<T> {
  let settled = false
  work.then(
    () => {
      settled = true
    },
    () => {
      settled = true
    },
  )
  for (let step = 0; step < 20_000 && !settled; step++) {
    await clock.advanceAsync(10)
    await new Promise((resolve) => setTimeout(resolve, 0))
  }
  return work
}

describe('outbound-client example', () => {
  it('ten concurrent calls reach the partner paced and bulkheaded, with no breach', async () => {
    const clock = new ManualClock()
    partner = await startPartnerApi({ clock, latencyMs: 2500 })
    const client = createPartnerClient({ baseUrl: partner.url, clock })
    const ids = Array.from({ length: 10 }, (_, i) => `order-${i + 1}`)

    const orders = await drive(clock, Promise.all(ids.map((id) => client.getOrder(id))))

    expect(orders).toEqual(ids.map((id): Order => ({ id, status: 'shipped' })))
    expect(partner.stats).toEqual({ served: 10, limited: 0, overloaded: 0, peakInFlight: 4 })
    expect([client.inFlight.inFlight, client.inFlight.queued, clock.pendingSleeps]).toEqual([
      0, 0, 0,
    ])
    // 2 per second for 10 calls, each 2.5 s long: the last starts at 4.5 s at the earliest.
    expect(clock.now()).toBeGreaterThanOrEqual(7000)
  })

  it('the partner does report breaches: an unpaced burst is refused', async () => {
    const clock = new ManualClock()
    partner = await startPartnerApi({ clock, latencyMs: 100 })
    const url = partner.url
    const statuses = await drive(
      clock,
      Promise.all(
        Array.from({ length: 5 }, (_, i) => fetch(`${url}/orders/${i}`).then((r) => r.status)),
      ),
    )
    expect(statuses.filter((status) => status === 429)).toHaveLength(3)
    expect(partner.stats).toMatchObject({ served: 2, limited: 3 })
  })
})
