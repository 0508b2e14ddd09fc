import { ManualClock } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { Fallback } from './fallback'
import { memoryStore } from './memory-store'
import { compilePolicy, concurrencyPolicy } from './policy'

const window = compilePolicy({ algorithm: 'fixed-window', limit: 2, window: '1m' }, 'test')
const slots = concurrencyPolicy('slots', 1)
const up = () => false
const down = () => true

describe('Fallback', () => {
  it("'deny' refuses with a wait of one probeInterval, and takes nothing", async () => {
    const fallback = new Fallback({ onError: 'deny', local: undefined, probeMs: 250 })
    const refused = { allowed: false, remaining: 0, resetMs: 250, retryAfterMs: 250 }
    expect(await fallback.take('k', [window, slots], 1)).toEqual({
      allowed: false,
      results: [
        { policy: window, limit: 2, ...refused },
        { policy: slots, limit: 1, ...refused },
      ],
    })
    expect(await fallback.force('k', [window], 1)).toEqual([
      { policy: window, limit: 2, ...refused },
    ])
  })

  it("'allow' admits uncounted: its slot is no slot, and a get holds none", async () => {
    const fallback = new Fallback({ onError: 'allow', local: undefined, probeMs: 250 })
    const taken = await fallback.take('k', [window, slots], [1, 1])
    expect(taken.allowed).toBe(true)
    expect(taken.results.map((r) => [r.remaining, r.lease?.permits])).toEqual([
      [2, undefined],
      [1, 1],
    ])
    expect(taken.results[1]?.lease?.id).toMatch(/^uncounted:/)
    expect(await fallback.release('k', slots, taken.results[1]!.lease!)).toBe(true)
    expect((await fallback.get('k', [slots]))[0]).toEqual({
      policy: slots,
      allowed: true,
      limit: 1,
      remaining: 1,
      resetMs: 0,
      retryAfterMs: 0,
    })
  })

  it("'local' decides in the local store; its leases and receipts come back to it", async () => {
    const clock = new ManualClock(0)
    const local = memoryStore({ clock })
    const fallback = new Fallback({ onError: 'local', local, probeMs: 250 })
    const first = await fallback.take('k', [window], 1)
    // Negative: a refund can tell it from a backend's receipt, which never is.
    expect(first.results[0]?.receipt).toBe(-1)
    await fallback.take('k', [window], 1)
    expect((await fallback.take('k', [window], 1)).allowed).toBe(false)
    // Back up, the refund of a take answered here still goes here, with its own receipt.
    const receipts = first.results.map((r) => r.receipt)
    expect(await fallback.refund('k', [window], 1, receipts, up)).toBe(true)
    expect((await local.get('k', [window]))[0]?.remaining).toBe(1)
    // A backend's permits cannot be given back while it is away; without receipts they
    // were most likely taken here.
    expect(await fallback.refund('k', [window], 1, [0], down)).toBe(true)
    expect((await local.get('k', [window]))[0]?.remaining).toBe(1)
    expect(await fallback.refund('k', [window], 1, undefined, down)).toBe(true)
    expect((await local.get('k', [window]))[0]?.remaining).toBe(2)
    expect(await fallback.refund('k', [window], 1, [0], up)).toBe(false)

    const held = await fallback.take('k', [slots], 1)
    const lease = held.results[0]!.lease!
    expect(lease.id).toMatch(/^local:/)
    expect((await local.take('k', [slots], 1)).allowed).toBe(false)
    expect(await fallback.release('k', slots, lease)).toBe(true)
    expect((await local.take('k', [slots], 1)).allowed).toBe(true)
    // A lease of the backend's is the store's to release.
    expect(await fallback.release('k', slots, { id: 'backend-lease', permits: 1 })).toBe(false)
  })

  it('forgets its leases with resetAll: their release is a no-op', async () => {
    const local = memoryStore()
    const fallback = new Fallback({ onError: 'local', local, probeMs: 250 })
    const lease = (await fallback.take('k', [slots], 1)).results[0]!.lease!
    await fallback.resetAll()
    const again = (await fallback.take('k', [slots], 1)).results[0]!.lease!
    expect(await fallback.release('k', slots, lease)).toBe(true)
    expect((await fallback.take('k', [slots], 1)).allowed).toBe(false)
    await fallback.release('k', slots, again)
    expect((await fallback.take('k', [slots], 1)).allowed).toBe(true)
  })
})
