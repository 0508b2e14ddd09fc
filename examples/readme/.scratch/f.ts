import { rateLimit } from '@sluice/fastify'
import Fastify from 'fastify'

const app = Fastify({ trustProxy: 1 })
app.addHook('onRequest', rateLimit({ limit: 100, window: '1m' }))
app.get(
  '/search',
  { onRequest: rateLimit({ name: 'search', limit: 10, window: '1m' }) },
  async (request) => ({
    remaining: request.rateLimit?.remaining,
  }),
)
