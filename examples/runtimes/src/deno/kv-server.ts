import { denoKvStore } from '@sluice/deno-kv'
import { rateLimit } from '@sluice/hono'
import { Hono } from 'hono'

// One budget per client for every process on this KV database (every region on Deploy).
const kv = await Deno.openKv(Deno.env.get('KV_PATH'))
const store = denoKvStore({ kv })

const app = new Hono()
  .use(rateLimit({ limit: 5, window: '1m', store }))
  .get('/', (c) =>
    c.json({ runtime: 'deno', key: c.var.rateLimit?.key, left: c.var.rateLimit?.remaining }),
  )

Deno.serve(
  {
    port: Number(Deno.env.get('PORT') ?? 3000),
    onListen: ({ hostname, port }) => console.log(`listening on http://${hostname}:${port}/`),
  },
  app.fetch,
)
