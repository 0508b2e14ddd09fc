import { bulkhead, rateLimit } from '@sluice/hono'
import { Hono } from 'hono'

// On Bun the default key, keys.ip(), is the peer Bun.serve reports (server.requestIP).
const app = new Hono()
  .use(rateLimit({ limit: 5, window: '1m' }))
  .get('/', (c) =>
    c.json({ runtime: 'bun', key: c.var.rateLimit?.key, left: c.var.rateLimit?.remaining }),
  )
  .get('/report', bulkhead({ max: 2 }), (c) => c.text('id\n1\n'))

const server = Bun.serve({ port: Number(process.env.PORT ?? 3000), fetch: app.fetch })
console.log(`listening on ${server.url}`)
