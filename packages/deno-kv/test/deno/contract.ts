/**
 * Inside Deno: the store contract and the model-based store test against a Deno KV
 * database in memory, on a ManualClock they advance, and what only a real KV can show (its
 * key limits, a commit whose answer is lost); results written for the Node side
 * (deno-kv.test.ts).
 */
import { ManualClock } from '@sluice/core'
import { runStoreContract, runStoreModel } from '@sluice/http/testing'
import { compilePolicy, concurrencyPolicy } from '@sluice/keyed/store'
import { describe, expect, it } from 'vitest'
import { runAndWrite } from '../../../hono/test/runtimes/vitest-shim'
import { denoKvStore, type KvAtomicLike, type KvLike } from '../../src/index'
import { BAD_PREFIXES, LONGEST_PREFIX } from '../prefixes'

const clock = new ManualClock(Date.now())
const kv = await Deno.openKv(':memory:')
let stores = 0

runStoreContract(
  'denoKvStore (Deno KV, ManualClock)',
  () => denoKvStore({ kv, prefix: ['contract', ++stores], clock }),
  { clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) }, carries: true },
)

runStoreModel(
  'denoKvStore (Deno KV, ManualClock)',
  () => denoKvStore({ kv, prefix: ['model', ++stores], clock }),
  {
    clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms) },
    leaseTtlMs: 60_000,
    runs: 15,
  },
)

/** `kv`, but the first `lost` commits go through and then fail as a locked database does. */
function losingAnswers(lost: number): KvLike {
  return {
    getMany: (keys) => kv.getMany(keys),
    list: (selector) => kv.list(selector),
    atomic() {
      const operation = kv.atomic()
      const wrapped: KvAtomicLike = {
        check(...checks) {
          operation.check(...checks)
          return wrapped
        },
        set(key, value, options) {
          operation.set(key, value, options)
          return wrapped
        },
        delete(key) {
          operation.delete(key)
          return wrapped
        },
        async commit() {
          const committed = await operation.commit()
          if (lost-- > 0) throw new Error('database is locked')
          return committed
        },
      }
      return wrapped
    },
  }
}

describe('denoKvStore on Deno KV', () => {
  it('a take whose commit went through unanswered, tried again, holds one slot and counts once', async () => {
    const store = denoKvStore({ kv: losingAnswers(1), prefix: ['retried', ++stores], clock })
    const window = compilePolicy({ algorithm: 'fixed-window', limit: 2, window: '1h' }, 'test')
    const slots = concurrencyPolicy('slots', 1)
    const taken = await store.take('k', [window, slots], 1)
    expect(taken.allowed).toBe(true)
    expect(taken.results.map((r) => [r.remaining, r.lease?.permits])).toEqual([
      [1, undefined],
      [0, 1],
    ])
    expect((await store.get('k', [window]))[0]?.remaining).toBe(1)
    expect((await store.take('k', [slots], 1)).allowed).toBe(false)
    await store.release('k', slots, taken.results[1]!.lease!)
    expect((await store.take('k', [slots], 1)).allowed).toBe(true)
  })

  it('refuses at construction the prefixes KV would refuse on every decision', async () => {
    for (const [, prefix, message, kvRefuses] of BAD_PREFIXES) {
      expect(() => denoKvStore({ kv, prefix: prefix as never })).toThrow(message)
      if (!kvRefuses) continue
      await expect(kv.get([...(prefix as Deno.KvKey), 'client', 'policy'])).rejects.toThrow()
    }
  })

  it('leaves room in the longest prefix for the longest client key and policy id', async () => {
    const store = denoKvStore({ kv, prefix: LONGEST_PREFIX, clock })
    const named = compilePolicy(
      {
        name: 'n'.repeat(128),
        algorithm: 'warm-up',
        limit: 1e10,
        window: '1d',
        capacity: 9_999_999_999,
        warmUp: '1h',
        block: { for: '1h', after: 3 },
      },
      'test',
    )
    // 256 UTF-16 code units of three UTF-8 bytes each: the longest key a store keeps verbatim.
    const key = '€'.repeat(256)
    expect((await store.take(key, [named], 1)).allowed).toBe(true)
  })
})

const encoder = new TextEncoder()
await runAndWrite(async (line) => {
  const bytes = encoder.encode(line)
  let written = 0
  while (written < bytes.length) written += await Deno.stdout.write(bytes.subarray(written))
})
kv.close()
