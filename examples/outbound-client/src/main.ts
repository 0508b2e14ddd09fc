import { systemClock } from '@sluice/core'
import { startPartnerApi } from './partner-api'
import { createPartnerClient } from './partner-client'

// Ten orders requested at once from a partner that allows 2 requests a second and 4 in
// flight, each taking 2.5 s. The client queues them; the partner sees no breach.
const partner = await startPartnerApi({ latencyMs: 2500 })
const client = createPartnerClient({ baseUrl: partner.url })
const started = systemClock.now()
const elapsed = () => `${((systemClock.now() - started) / 1000).toFixed(2)}s`

console.log(`partner at ${partner.url}: 2 requests/s, 4 in flight, 2.5 s per request`)
const ids = Array.from({ length: 10 }, (_, i) => `order-${i + 1}`)
await Promise.all(
  ids.map(async (id) => {
    const order = await client.getOrder(id)
    console.log(
      `${elapsed()}  ${order.id} ${order.status}  (in flight: ${client.inFlight.inFlight})`,
    )
  }),
)
const { served, limited, overloaded, peakInFlight } = partner.stats
console.log(
  `${elapsed()}  done: ${served} served, ${limited} rate breaches, ${overloaded} concurrency breaches, peak ${peakInFlight} in flight`,
)
await partner.close()
