import { makePolicy } from '@sluice/keyed/store'
import { describe, expect, it } from 'vitest'
import { clusterStore } from '../src/index'

// This test process is no node:cluster worker, so with transport 'ipc' it is the primary.
describe('clusterStore options', () => {
  it('refuses bad options by name, at construction', () => {
    expect(() => clusterStore({ transport: 'tcp' as 'ipc' })).toThrow(
      /clusterStore: "transport" must be one of 'ipc', 'socket'.*"tcp"/,
    )
    expect(() => clusterStore({ host: true })).toThrow(
      `clusterStore: "host" and "path" are only used with transport 'socket' (with 'ipc' the node:cluster primary hosts), got transport 'ipc'`,
    )
    expect(() => clusterStore({ transport: 'socket', host: 'yes' as unknown as boolean })).toThrow(
      'clusterStore: "host" must be a boolean, got "yes"',
    )
    expect(() => clusterStore({ transport: 'socket', path: '' })).toThrow(
      'clusterStore: "path" must be a non-empty string, got ""',
    )
    expect(() => clusterStore({ name: 'a b' })).toThrow(
      `clusterStore: "name" must be 1 to 64 letters, digits, '_', '.' or '-', got "a b"`,
    )
    expect(() => clusterStore({ timeuot: '1s' } as object)).toThrow(/clusterStore.*"timeuot"/)
    // The rules every remote store reads its options by (redisStore's).
    expect(() => clusterStore({ timeout: '2m', leaseTtl: '1m' })).toThrow(
      /clusterStore: "leaseTtl" must be longer than "timeout"/,
    )
    expect(() => clusterStore({ onError: 'deny', local: clusterStore({ name: 'l' }) })).toThrow(
      `clusterStore: "local" is only used with onError 'local', got onError "deny"`,
    )
  })

  it('reads "lease" by the rules of withLeases, in the host too', () => {
    expect(() => clusterStore({ name: 'lease', lease: { share: 2 } })).toThrow(
      /clusterStore: "lease.share" must be a number above 0 and at most 1/,
    )
  })

  it('hosts once per name in a process', async () => {
    const store = clusterStore({ name: 'once' })
    expect(() => clusterStore({ name: 'once' })).toThrow(
      'clusterStore: a store named "once" is already hosted in this process; give each store its own "name"',
    )
    await store.close()
    await clusterStore({ name: 'once' }).close()
  })

  it('in the primary it is the host and decides in this process', async () => {
    const store = clusterStore({ name: 'primary', maxKeys: 10 })
    const policy = makePolicy(
      { algorithm: 'token-bucket', limit: 2, window: 60_000, capacity: 2 },
      'p',
    )
    expect(store.role).toBe('host')
    expect(store.status).toBe('up')
    expect((await store.take('k', [policy], 2)).allowed).toBe(true)
    expect((await store.take('k', [policy], 1)).allowed).toBe(false)
    await store.close()
  })
})
