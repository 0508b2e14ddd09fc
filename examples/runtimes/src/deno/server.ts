import { bulkhead, rateLimit } from '@sluice/hono'
import { Hono } from 'hono'

// On Deno the default key, keys.ip(), is the peer Deno.serve reports (info.remoteAddr).
const app = new Hono()
  .use(rateLimit({ limit: 5, window: '1m' }))
  .get('/', (c) =>
    c.json({ runtime: 'deno', key: c.var.rateLimit?.key, left: c.var.rateLimit?.remaining }),
  )
  .get('/report', bulkhead({ max: 2 }), (c) => c.text('id\n1\n'))

Deno.serve(
  {
    port: Number(Deno.env.get('PORT') ?? 3000),
    onListen: ({ hostname, port }) => console.log(`listening on http://${hostname}:${port}/`),
  },
  app.fetch,
)
