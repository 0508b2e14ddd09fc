import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundleWorker, worker } from './workerd'

// A Worker's I/O ends with its response unless handed to the execution context's
// waitUntil: a bulkhead release or a refund made once the body is sent must go there, or
// workerd drops it and the slot stays taken until its lease expires.
describe('post-response store calls on Workers (workerd)', () => {
  let mf: Miniflare
  let bundles: { remove(): void }[]

  beforeAll(async () => {
    const [objects, app] = await Promise.all([
      bundleWorker('objects.ts'),
      bundleWorker('hono-app.ts'),
    ])
    bundles = [objects, app]
    mf = new Miniflare({
      workers: [
        worker('app', app, {
          durableObjects: { SLUICE: { className: 'SluiceDurableObject', scriptName: 'objects' } },
        }),
        worker('objects', objects, {
          durableObjects: { SLUICE: { className: 'SluiceDurableObject', useSQLite: true } },
        }),
      ],
    })
    await mf.ready
  })
  afterAll(async () => {
    await mf?.dispose()
    for (const bundle of bundles ?? []) bundle.remove()
  })

  const state = async () =>
    (await (await mf.dispatchFetch('http://app/state')).json()) as {
      slots: number
      permits: number
    }

  /** Polls the objects (on real time, asserting no duration) until `read` gives `want`. */
  async function eventually(read: () => Promise<number>, want: number, what: string) {
    for (let i = 0; i < 500; i++) {
      if ((await read()) === want) return
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    throw new Error(`timed out waiting until ${what}`)
  }

  it('a bulkhead of 2 on Durable Objects frees each slot once its response is sent', async () => {
    for (let i = 1; i <= 4; i++) {
      const res = await mf.dispatchFetch('http://app/report')
      expect([res.status, await res.text()]).toEqual([200, 'id\n1\n'])
      await eventually(async () => (await state()).slots, 2, `slot ${i} is back`)
    }
  })

  it('a refund of a finished response reaches its object', async () => {
    for (let i = 1; i <= 4; i++) {
      const res = await mf.dispatchFetch('http://app/refunded')
      expect([res.status, await res.text()]).toEqual([200, 'ok'])
      await eventually(async () => (await state()).permits, 2, `permit ${i} is back`)
    }
  })
})
