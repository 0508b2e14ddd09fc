import { describe, expect, it } from 'vitest'
import { memoryStore } from './memory-store'
import { readLeaseTtl, readRemoteStoreOptions } from './remote-options'

const read = (options: object) =>
  readRemoteStoreOptions('myStore', options as never, { timeout: '500ms' })

describe('readRemoteStoreOptions', () => {
  it('fills the defaults, the local store included', () => {
    const settings = read({})
    expect(settings).toMatchObject({
      timeoutMs: 500,
      leaseTtlMs: 60_000,
      probeMs: 1_000,
      onError: 'local',
      onFailure: undefined,
      onRecovery: undefined,
    })
    expect(typeof settings.local?.take).toBe('function')
    expect(read({ onError: 'deny' }).local).toBeUndefined()
    const local = memoryStore()
    expect(read({ local }).local).toBe(local)
  })

  it.each<[object, string]>([
    // setTimeout would fire at once past 2^31 - 1 ms: every call would time out.
    [
      { timeout: '30d' },
      'myStore: "timeout" must be at most 2147483647 ms (about 24.8 days), got "30d"',
    ],
    [
      { probeInterval: 2 ** 31 },
      'myStore: "probeInterval" must be at most 2147483647 ms (about 24.8 days), got 2147483648',
    ],
    [
      { timeout: '2s', leaseTtl: '1s' },
      'myStore: "leaseTtl" must be longer than "timeout" (2000 ms), or a slot could expire before its take is answered, got "1s"',
    ],
    [
      { timeout: '2m' },
      'myStore: "leaseTtl" must be longer than "timeout" (120000 ms), or a slot could expire before its take is answered, got "1m"',
    ],
    [{ timeout: 0 }, 'myStore: "timeout" must be a positive duration, got 0'],
    [{ leaseTtl: '0s' }, 'myStore: "leaseTtl" must be a positive duration, got "0s"'],
    [
      { onError: 'retry' },
      `myStore: "onError" must be one of 'deny', 'allow', 'local', got "retry"`,
    ],
    [{ onFailure: 'log' }, 'myStore: "onFailure" must be a function, got "log"'],
    [{ onRecovery: {} }, 'myStore: "onRecovery" must be a function, got an object'],
    [
      { onError: 'deny', local: memoryStore() },
      `myStore: "local" is only used with onError 'local', got onError "deny"`,
    ],
    [
      { local: {} },
      'myStore: "local" must be a store (take, refund, force, block, release, get, reset, resetAll), got an object',
    ],
  ])('refuses %j', (options, message) => {
    expect(() => read(options)).toThrow(message)
  })

  it('throws TypeError for a wrong kind and RangeError for a wrong value', () => {
    expect(() => read({ local: {} })).toThrow(TypeError)
    expect(() => read({ timeout: '30d' })).toThrow(RangeError)
  })
})

describe('readLeaseTtl', () => {
  it("reads leaseTtl alone, '1m' by default, by the same rules", () => {
    expect(readLeaseTtl('denoKvStore', undefined)).toBe(60_000)
    expect(readLeaseTtl('denoKvStore', '30s')).toBe(30_000)
    expect(() => readLeaseTtl('denoKvStore', '30d')).toThrow(
      new RangeError(
        'denoKvStore: "leaseTtl" must be at most 2147483647 ms (about 24.8 days), got "30d"',
      ),
    )
  })
})
