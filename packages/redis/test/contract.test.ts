import { ManualClock } from '@sluice/core'
import { runStoreContract } from '@sluice/http/testing'
import { afterEach, expect } from 'vitest'
import { type RedisStoreError, redisStore } from '../src/index'
import { connect, describeRedis, uniquePrefix } from './helpers'

// The suite memoryStore passes, unchanged. onError 'deny' and the failure check below make
// sure every answer came from Redis, never from a fallback.
const client = connect()
const failures: RedisStoreError[] = []

afterEach(() => {
  expect(failures).toEqual([])
})

describeRedis('redisStore', () => {
  // `carries`: Redis keeps each policy's state by name and algorithm and carries it over
  // to a changed spec (lib/record.lua), as the memory store does.
  runStoreContract(
    'redisStore',
    () =>
      redisStore({
        client,
        prefix: uniquePrefix(),
        onError: 'deny',
        onFailure: (error) => failures.push(error),
      }),
    { carries: true },
  )

  // Once more with the scripts on a test clock (the `clock` option): what the rate tables
  // need, answers exact to the microsecond at instants the test chooses.
  const clock = new ManualClock(1_800_000_000_000)
  runStoreContract(
    'redisStore (on a test clock)',
    () =>
      redisStore({
        client,
        prefix: uniquePrefix(),
        onError: 'deny',
        onFailure: (error) => failures.push(error),
        clock,
        // A busy machine must not turn a slow answer into onError's.
        timeout: '10s',
      }),
    { clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) }, carries: true },
  )
})
