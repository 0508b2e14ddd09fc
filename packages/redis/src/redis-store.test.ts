import { memoryStore } from '@sluice/keyed'
import { describe, expect, it } from 'vitest'
import type { RedisStoreOptions } from './options'
import { redisStore } from './redis-store'

// Construction-time validation needs no server: nothing is sent until the first call.
const client = async () => 'OK'

describe('redisStore options', () => {
  it('builds with defaults from a client alone', () => {
    expect(redisStore({ client }).status).toBe('up')
  })

  it.each<[Partial<RedisStoreOptions> | null, string]>([
    [null, 'redisStore: options must be an object, got null'],
    [{ prefix: 7 as never }, 'redisStore: "prefix" must be a string, got 7'],
    [
      { prefix: 'app:{x}:' },
      'redisStore: "prefix" must not contain "{" or "}" (it would break the Cluster hash tag), got "app:{x}:"',
    ],
    [{ timeout: 0 }, 'redisStore: "timeout" must be a positive duration, got 0'],
    [{ timeout: 'soon' as never }, 'redisStore: "timeout" must be a duration'],
    [{ leaseTtl: '0s' }, 'redisStore: "leaseTtl" must be a positive duration, got "0s"'],
    [{ probeInterval: -1 }, 'redisStore: "probeInterval" must be a duration'],
    [
      { onError: 'retry' as never },
      `redisStore: "onError" must be one of 'deny', 'allow', 'local', got "retry"`,
    ],
    [{ onFailure: 'log' as never }, 'redisStore: "onFailure" must be a function, got "log"'],
    [{ onRecovery: {} as never }, 'redisStore: "onRecovery" must be a function, got an object'],
    [
      { onError: 'deny', local: memoryStore() },
      `redisStore: "local" is only used with onError 'local', got onError "deny"`,
    ],
    [
      { local: { take: () => undefined } as never },
      'redisStore: "local" must be a store (take, refund, force, block, release, get, reset, resetAll), got an object',
    ],
    // Issue 11: a misspelt name used to leave its default in force.
    [
      { onerror: 'deny' } as never,
      'redisStore: unknown option "onerror" (did you mean "onError"?)',
    ],
    [{ timeOut: 100 } as never, 'redisStore: unknown option "timeOut" (did you mean "timeout"?)'],
    [{ expiry: '1m' } as never, 'redisStore: unknown option "expiry"'],
    // setTimeout would fire at once past 2^31 - 1 ms: every call would time out.
    [
      { timeout: '30d' },
      'redisStore: "timeout" must be at most 2147483647 ms (about 24.8 days), got "30d"',
    ],
    [
      { probeInterval: 2 ** 31 },
      'redisStore: "probeInterval" must be at most 2147483647 ms (about 24.8 days), got 2147483648',
    ],
    [
      { timeout: '2s', leaseTtl: '1s' },
      'redisStore: "leaseTtl" must be longer than "timeout" (2000 ms), or a slot could expire before its take is answered, got "1s"',
    ],
    [{ prefix: 'x'.repeat(257) }, 'redisStore: "prefix" must be at most 256 characters'],
  ])('refuses %j', (options, message) => {
    const build = () => redisStore(options === null ? (null as never) : { client, ...options })
    expect(build).toThrow(message)
  })

  it('throws TypeError for a wrong type and RangeError for a wrong value', () => {
    expect(() => redisStore({ client, prefix: 7 as never })).toThrow(TypeError)
    expect(() => redisStore({ client, prefix: '{' })).toThrow(RangeError)
    expect(() => redisStore({ client, timeout: 0 })).toThrow(RangeError)
  })
})
