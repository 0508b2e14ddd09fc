import { keys, rateLimit } from '@sluice/hono'
import { Hono } from 'hono'

const app = new Hono<{ Variables: { user?: { id: string } } }>()
app.use(async (c, next) => {
  const id = c.req.header('x-user')
  if (id) c.set('user', { id })
  await next()
})
app.use(
  rateLimit({
    limit: 100,
    window: '1h',
    key: keys.first((c) => (c.get('user') as { id: string } | undefined)?.id, keys.ip()),
  }),
)
app.get('/', (c) => c.json(c.get('rateLimit') ?? null))
const res = await app.request('/', { headers: { 'x-user': 'ann' } })
console.log((await res.json()).key) // '0\u001fann': keys.first tags which extractor found the key
