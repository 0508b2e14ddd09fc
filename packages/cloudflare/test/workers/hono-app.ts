/**
 * A Hono app on Workers whose bulkhead and refunds live in Durable Objects: what a user
 * deploys (examples/runtimes), with a route that reports the budgets as the objects keep them.
 */
import { bulkhead, keys, rateLimit } from '@sluice/hono'
import { type ExecutionContext, Hono } from 'hono'
import { type DurableObjectNamespaceLike, durableObjectStore } from '../../src/index'

interface Env {
  SLUICE: DurableObjectNamespaceLike
}

let app: Hono<{ Bindings: Env }> | undefined

function build(env: Env): Hono<{ Bindings: Env }> {
  const store = durableObjectStore({ namespace: env.SLUICE, onError: 'deny', prefix: 'app' })
  const slots = bulkhead({ max: 2, store })
  const refunded = rateLimit({
    limit: 2,
    window: '1h',
    key: keys.global(),
    refundWhen: () => true,
    store,
  })
  return new Hono<{ Bindings: Env }>()
    .get('/report', slots, (c) => c.text('id\n1\n'))
    .get('/refunded', refunded, (c) => c.text('ok'))
    .get('/state', async (c) =>
      c.json({
        slots: (await slots.store.get('global', slots.policies))[0]?.remaining,
        permits: (await refunded.get('global'))[0]?.remaining,
      }),
    )
}

export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
    app ??= build(env)
    return app.fetch(request, env, ctx)
  },
}
