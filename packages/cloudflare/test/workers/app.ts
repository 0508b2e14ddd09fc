/**
 * A Worker that decides with `durableObjectStore` on the objects of another Worker: two
 * copies of it are two isolates sharing one budget (shared-budget.test.ts).
 */
import { compilePolicy, concurrencyPolicy } from '@sluice/keyed/store'
import { type DurableObjectNamespaceLike, durableObjectStore } from '../../src/index'

interface Env {
  SLUICE: DurableObjectNamespaceLike
  NAME: string
}

const policy = compilePolicy(
  { name: 'shared', algorithm: 'fixed-window', limit: 5, window: '1h' },
  'test',
)
const slots = concurrencyPolicy('slots', 1)
let store: ReturnType<typeof durableObjectStore> | undefined

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    store ??= durableObjectStore({ namespace: env.SLUICE, onError: 'deny' })
    const url = new URL(request.url)
    const key = url.searchParams.get('key') ?? 'client'
    if (url.pathname === '/slot') {
      const taken = await store.take(key, [slots], 1)
      const lease = taken.results[0]?.lease
      if (url.searchParams.has('release') && lease !== undefined)
        await store.release(key, slots, lease)
      return Response.json({ worker: env.NAME, allowed: taken.allowed })
    }
    const taken = await store.take(key, [policy], 1)
    const [result] = taken.results
    return Response.json({ worker: env.NAME, allowed: taken.allowed, remaining: result?.remaining })
  },
}
