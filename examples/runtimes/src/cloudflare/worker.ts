import { env } from 'cloudflare:workers'
import { durableObjectStore } from '@sluice/cloudflare'
import { bulkhead, rateLimit } from '@sluice/hono'
import { Hono } from 'hono'

// One budget per client for every isolate and location: the state lives in Durable Objects.
const store = durableObjectStore({ namespace: env.SLUICE })

// On Workers the default key, keys.ip(), is the cf-connecting-ip header Cloudflare sets.
const app = new Hono()
  .use(rateLimit({ limit: 5, window: '1m', store }))
  .get('/', (c) =>
    c.json({ runtime: 'workerd', key: c.var.rateLimit?.key, left: c.var.rateLimit?.remaining }),
  )
  .get('/report', bulkhead({ max: 2, store }), (c) => c.text('id\n1\n'))

export default app
// The objects that hold the budgets, bound as SLUICE in wrangler.jsonc.
export { SluiceDurableObject } from '@sluice/cloudflare'
