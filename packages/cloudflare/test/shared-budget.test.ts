import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { compilePolicy } from '@sluice/keyed/store'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DurableObjectNamespaceLike, durableObjectStore } from '../src/index'
import { bundleWorker, worker } from './workerd'

// SluiceDurableObject as deployed: on the wall clock, its store inside Workers.
describe('one budget across isolates (workerd)', () => {
  let mf: Miniflare
  let bundles: { remove(): void }[]

  beforeAll(async () => {
    const [objects, app] = await Promise.all([bundleWorker('objects.ts'), bundleWorker('app.ts')])
    bundles = [objects, app]
    const bound = { SLUICE: { className: 'SluiceDurableObject', scriptName: 'objects' } }
    mf = new Miniflare({
      workers: [
        worker('objects', objects, {
          durableObjects: { SLUICE: { className: 'SluiceDurableObject', useSQLite: true } },
        }),
        // Two Workers are two isolates, as two locations of one Worker would be.
        worker('a', app, { durableObjects: bound, bindings: { NAME: 'a' } }),
        worker('b', app, { durableObjects: bound, bindings: { NAME: 'b' } }),
      ],
    })
    await mf.ready
  })
  afterAll(async () => {
    await mf?.dispose()
    for (const bundle of bundles ?? []) bundle.remove()
  })

  const ask = async (name: 'a' | 'b', path: string) => {
    const app = (await mf.getWorker(name)) as unknown as { fetch(url: string): Promise<Response> }
    return (await (await app.fetch(`http://app${path}`)).json()) as {
      worker: string
      allowed: boolean
      remaining?: number
    }
  }

  it('two isolates take from one budget per key, in turn', async () => {
    const key = `client-${Date.now()}`
    const seen = []
    for (let i = 0; i < 7; i++) seen.push(await ask(i % 2 === 0 ? 'a' : 'b', `/?key=${key}`))
    expect(seen.map((r) => [r.worker, r.allowed, r.remaining])).toEqual([
      ['a', true, 4],
      ['b', true, 3],
      ['a', true, 2],
      ['b', true, 1],
      ['a', true, 0],
      ['b', false, 0],
      ['a', false, 0],
    ])
    // Another key has a budget of its own.
    expect(await ask('b', `/?key=${key}-other`)).toMatchObject({ allowed: true, remaining: 4 })
  })

  it('a concurrency slot taken in one isolate is held for the other', async () => {
    const key = `slot-${Date.now()}`
    expect((await ask('a', `/slot?key=${key}`)).allowed).toBe(true)
    expect((await ask('b', `/slot?key=${key}`)).allowed).toBe(false)
    const freed = `freed-${Date.now()}`
    expect((await ask('a', `/slot?key=${freed}&release`)).allowed).toBe(true)
    expect((await ask('b', `/slot?key=${freed}&release`)).allowed).toBe(true)
  })
})

describe('a budget outlives the process (workerd, SQLite storage on disk)', () => {
  it('a restarted workerd reads the state back', async () => {
    const objects = await bundleWorker('objects.ts')
    const persist = mkdtempSync(join(tmpdir(), 'sluice-do-'))
    const start = async () => {
      const mf = new Miniflare({
        ...worker('objects', objects, {
          durableObjects: { SLUICE: { className: 'SluiceDurableObject', useSQLite: true } },
        }),
        durableObjectsPersist: persist,
      })
      await mf.ready
      const namespace = (await mf.getDurableObjectNamespace('SLUICE')) as unknown
      return {
        mf,
        store: durableObjectStore({
          namespace: namespace as DurableObjectNamespaceLike,
          onError: 'deny',
        }),
      }
    }
    // A token bucket: nothing refills in the few hundred milliseconds this takes.
    const policy = compilePolicy({ algorithm: 'token-bucket', limit: 5, window: '1h' }, 'test')
    try {
      const first = await start()
      for (let i = 0; i < 3; i++) await first.store.take('client', [policy], 1)
      await first.mf.dispose()
      const second = await start()
      const taken = await second.store.take('client', [policy], 1)
      expect([taken.allowed, taken.results[0]?.remaining]).toEqual([true, 1])
      await second.mf.dispose()
    } finally {
      objects.remove()
      rmSync(persist, { recursive: true, force: true })
    }
  })
})
