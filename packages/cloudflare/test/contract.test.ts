import { ManualClock } from '@sluice/core'
import { runStoreContract, runStoreModel } from '@sluice/http/testing'
import { afterEach, expect } from 'vitest'
import { type DurableObjectStoreError, durableObjectStore } from '../src/index'
import { inProcessNamespace } from './in-process'

// The suite memoryStore passes, on the objects' code in this process and a ManualClock
// (workerd runs the same suite in miniflare.test.ts, on real time). onError 'deny' and the
// failure check make sure every answer came from an object, never from a fallback.
const failures: DurableObjectStoreError[] = []

afterEach(() => {
  expect(failures).toEqual([])
})

const clock = new ManualClock(1_800_000_000_000)

runStoreContract(
  'durableObjectStore (objects in process, ManualClock)',
  () =>
    durableObjectStore({
      namespace: inProcessNamespace(clock).namespace,
      shards: 4,
      onError: 'deny',
      onFailure: (error) => failures.push(error),
    }),
  { clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) }, carries: true },
)

runStoreModel(
  'durableObjectStore (objects in process, ManualClock)',
  () =>
    durableObjectStore({
      namespace: inProcessNamespace(clock).namespace,
      shards: 4,
      onError: 'deny',
      onFailure: (error) => failures.push(error),
    }),
  { clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) }, leaseTtlMs: 60_000 },
)
