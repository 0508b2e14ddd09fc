import type * as Workers from '@cloudflare/workers-types/index.ts'
import { describe, expectTypeOf, it } from 'vitest'
import {
  type DurableObjectNamespaceLike,
  durableObjectStore,
  SluiceDurableObject,
} from '../src/index'

// Types only (checked by tsc): the real bindings fit the store's loose interfaces.
describe('types against @cloudflare/workers-types', () => {
  it('a DurableObjectNamespace binding is a namespace for the store', () => {
    expectTypeOf<Workers.DurableObjectNamespace>().toMatchTypeOf<DurableObjectNamespaceLike>()
    const make = (env: { SLUICE: Workers.DurableObjectNamespace }) =>
      durableObjectStore({ namespace: env.SLUICE })
    expectTypeOf(make).returns.toHaveProperty('take')
  })

  it('SluiceDurableObject is constructed from a DurableObjectState', () => {
    const make = (ctx: Workers.DurableObjectState, env: unknown) =>
      new SluiceDurableObject(ctx, env)
    expectTypeOf(make).returns.toHaveProperty('fetch')
  })
})
