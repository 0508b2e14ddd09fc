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
  runStoreContract('redisStore', () =>
    redisStore({
      client,
      prefix: uniquePrefix(),
      onError: 'deny',
      onFailure: (error) => failures.push(error),
    }),
  )
})
