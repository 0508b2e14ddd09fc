import { keys, rateLimit } from '@sluice/fastify'
import Fastify from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    user?: { id: string }
  }
}

const app = Fastify()
app.decorateRequest('user', undefined)
app.addHook('onRequest', async (request) => {
  const id = request.headers['x-user']
  if (typeof id === 'string') request.user = { id }
})
app.addHook(
  'onRequest',
  rateLimit({
    limit: 100,
    window: '1h',
    key: keys.first((request) => request.user?.id, keys.ip()),
  }),
)
app.get('/', async (request) => request.rateLimit)
console.log((await app.inject({ url: '/', headers: { 'x-user': 'ann' } })).json())
await app.close()
