import { runStoreContract, runStoreModel } from '@sluice/http/testing'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import {
  type DurableObjectNamespaceLike,
  type DurableObjectStoreError,
  durableObjectStore,
} from '../src/index'
import { startObjects } from './workerd'

// The store contract against the objects running in workerd (miniflare), with SQLite
// storage; the store's side runs here and reaches them through miniflare's binding proxy.
// The objects decide on a ManualClock the contract advances (ManualClockObject, a
// SluiceDurableObject with another clock): on the wall clock, fixed windows of 300 ms
// aligned to the epoch would now and then put two takes of one test in two windows.
// onError 'deny' and the failure check make sure every answer came from an object. The
// model-based test runs there too, on fewer sequences: each call is a round trip to workerd.
let objects: Awaited<ReturnType<typeof startObjects>>
const failures: DurableObjectStoreError[] = []

beforeAll(async () => {
  objects = await startObjects()
})
afterAll(async () => {
  await objects?.dispose()
})
afterEach(() => {
  expect(failures).toEqual([])
})

/** A store on the ManualClock objects whose every answer must come from an object. */
function onObjects(prefix: string) {
  return durableObjectStore({
    namespace: objects.manual as unknown as DurableObjectNamespaceLike,
    shards: 4,
    prefix: `${prefix}-${Date.now()}`,
    timeout: '5s',
    onError: 'deny',
    onFailure: (error) => failures.push(error),
  })
}

runStoreContract('durableObjectStore (objects in workerd)', () => onObjects('contract'), {
  clock: { now: () => objects.now(), advance: (ms) => objects.advance(ms) },
  carries: true,
})

runStoreModel('durableObjectStore (objects in workerd)', () => onObjects('model'), {
  clock: { now: () => objects.now(), advance: (ms) => objects.advance(ms) },
  leaseTtlMs: 60_000,
  runs: 6,
})
