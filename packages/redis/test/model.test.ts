import { ManualClock } from '@sluice/core'
import { runStoreModel } from '@sluice/http/testing'
import { afterEach, expect } from 'vitest'
import { type RedisStoreError, redisStore } from '../src/index'
import { connect, describeRedis, uniquePrefix } from './helpers'

// The model-based test every store runs (random takes, refunds, forces, blocks, releases,
// gets and resets, with costs per policy and time moved by the test), on a real
// redis-server: the scripts decide on the test's clock (the `clock` option) and every
// field of every result must be the kernels'. onError 'deny' and the failure check make
// sure every answer came from Redis. (The Cluster runs it in cluster.test.ts.)
const client = connect()
const failures: RedisStoreError[] = []
const clock = new ManualClock(123_456.789)

afterEach(() => {
  expect(failures).toEqual([])
})

describeRedis('redisStore', () => {
  runStoreModel(
    'redisStore on redis-server',
    () =>
      redisStore({
        client,
        prefix: uniquePrefix(),
        onError: 'deny',
        onFailure: (error) => failures.push(error),
        clock,
        // A busy machine must not turn a slow answer into onError's.
        timeout: '10s',
        leaseTtl: '1m',
      }),
    {
      clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) },
      leaseTtlMs: 60_000,
      runs: 200,
    },
  )
})
