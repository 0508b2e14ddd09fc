import diagnostics from 'node:diagnostics_channel'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { StoreEvent } from './events'
import { StoreHealth, type StoreHealthOptions } from './store-health'

class BackendError extends Error {
  readonly code = 'ERR_BACKEND'
}

const events: StoreEvent[] = []
const onEvent = (message: unknown) => {
  events.push(message as StoreEvent)
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['performance', 'setTimeout'] })
  diagnostics.subscribe('sluice:store', onEvent)
})
afterEach(() => {
  vi.useRealTimers()
  diagnostics.unsubscribe('sluice:store', onEvent)
  events.length = 0
})

function health(more: Partial<StoreHealthOptions<string, BackendError>> = {}) {
  const failures: BackendError[] = []
  let recoveries = 0
  const made = new StoreHealth<string, BackendError>({
    store: 'myStore',
    onError: 'deny',
    probeMs: 100,
    onFailure: (error) => failures.push(error),
    onRecovery: () => recoveries++,
    warnings: {
      down: 'ERR_MY_DOWN',
      until: 'it answers again',
      recovered: 'ERR_MY_RECOVERED',
      recovery: 'the backend answers again',
    },
    ...more,
  })
  return { health: made, failures, recoveries: () => recoveries }
}

const failure = new BackendError('myStore: the backend failed: connection reset')

describe('StoreHealth without probes (the calls probe)', () => {
  it('takes a failed shard out of use at once, lets one call through per probeInterval, and reports the outage once', () => {
    const { health: h, failures, recoveries } = health()
    h.fail('a', 'k', failure, h.episode)
    expect([h.status, failures, events.map((e) => [e.event, e.store])]).toEqual([
      'down',
      [failure],
      [['failure', 'myStore']],
    ])
    expect(h.outOfUse('a')).toBe(true)
    vi.advanceTimersByTime(99)
    expect(h.outOfUse('a')).toBe(true)
    vi.advanceTimersByTime(1)
    // The probe: one call goes, the next ones wait for its outcome (or another interval).
    expect([h.outOfUse('a'), h.outOfUse('a')]).toEqual([false, true])
    h.fail('a', 'k', failure, h.episode)
    vi.advanceTimersByTime(100)
    expect(h.outOfUse('a')).toBe(false)
    h.answered('a')
    expect([h.status, h.outOfUse('a'), failures.length, recoveries()]).toEqual(['up', false, 1, 1])
    expect(events.map((e) => e.event)).toEqual(['failure', 'recovery'])
  })

  it('keeps shards apart: one down leaves the others in use, and the outage ends with the last', () => {
    const { health: h, failures, recoveries } = health()
    h.fail('a', 'k1', failure, h.episode)
    h.fail('b', 'k2', failure, h.episode)
    expect([h.outOfUse('a'), h.outOfUse('b'), h.outOfUse('c')]).toEqual([true, true, false])
    expect(failures.length).toBe(1)
    h.answered('a')
    expect([h.status, recoveries()]).toEqual(['down', 0])
    h.answered('b')
    expect([h.status, recoveries()]).toEqual(['up', 1])
  })

  it('ignores a late failure of a call that started before the recovery', () => {
    const { health: h, failures } = health()
    const before = h.episode
    h.fail('a', 'k', failure, before)
    h.answered('a')
    h.fail('a', 'k', failure, before)
    expect([h.status, failures.length]).toEqual(['up', 1])
  })
})

describe('StoreHealth with a probe', () => {
  it('probes a failed shard at once: a probe that answers means the failure was the call’s alone', async () => {
    const probed: string[] = []
    const { health: h, failures } = health({
      probe: async (shard, key) => {
        probed.push(`${shard}:${key}`)
      },
    })
    h.fail('a', 'k', failure, h.episode)
    expect(h.outOfUse('a')).toBe(true)
    await vi.advanceTimersByTimeAsync(0)
    expect([probed, h.status, failures.length, events.length]).toEqual([['a:k'], 'up', 0, 0])
  })

  it('confirms the outage when the probe fails too, probes every probeInterval, reports the end once', async () => {
    let answering = false
    let probes = 0
    const recovered: string[] = []
    const {
      health: h,
      failures,
      recoveries,
    } = health({
      probe: async () => {
        probes++
        if (!answering) throw failure
      },
      recovered: (shard) => recovered.push(shard),
    })
    h.fail('a', 'k', failure, h.episode)
    await vi.advanceTimersByTimeAsync(0)
    expect([probes, failures.length, h.status]).toEqual([1, 1, 'down'])
    await vi.advanceTimersByTimeAsync(250)
    expect([probes, failures.length, h.outOfUse('a')]).toEqual([3, 1, true])
    answering = true
    await vi.advanceTimersByTimeAsync(100)
    expect([probes, h.status, recoveries(), recovered]).toEqual([4, 'up', 1, ['a']])
    expect(events.map((e) => e.event)).toEqual(['failure', 'recovery'])
  })

  it('keeps a suspect shard in use while its probe runs; a failed probe takes it out', async () => {
    let answering = true
    let probes = 0
    const { health: h, failures } = health({
      probe: async () => {
        probes++
        if (!answering) throw failure
      },
    })
    h.suspect('a', 'k', failure, h.episode)
    h.suspect('a', 'k', failure, h.episode)
    expect([h.status, h.outOfUse('a')]).toEqual(['up', false])
    await vi.advanceTimersByTimeAsync(0)
    expect([probes, h.status, failures.length]).toEqual([1, 'up', 0])
    answering = false
    h.suspect('a', 'k', failure, h.episode)
    await vi.advanceTimersByTimeAsync(0)
    // The suspect's probe failed, then the shard's own probe: an outage, reported once.
    expect([probes, h.status, failures]).toEqual([3, 'down', [failure]])
  })

  it('treats a suspect as a failure without probes (nothing can tell)', () => {
    const { health: h, failures } = health()
    h.suspect('a', 'k', failure, h.episode)
    expect([h.status, failures]).toEqual(['down', [failure]])
  })

  it('stops probing once the store is closed for good', async () => {
    let probes = 0
    const { health: h } = health({
      probe: async () => {
        probes++
        throw failure
      },
      live: () => false,
    })
    h.fail('a', 'k', failure, h.episode)
    await vi.advanceTimersByTimeAsync(1_000)
    expect(probes).toBe(1)
  })
})

describe('StoreHealth reports', () => {
  it('warns by default, naming the store once and what decisions follow', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    try {
      const { health: h } = health({ onFailure: undefined, onRecovery: undefined })
      h.fail('a', 'k', failure, h.episode)
      h.answered('a')
      expect(warn.mock.calls).toEqual([
        [
          "myStore: the backend failed: connection reset (ERR_BACKEND); answering with onError 'deny' until it answers again (see https://github.com/sluice-js/sluice/blob/main/docs/warnings/ERR_MY_DOWN.md)",
          { type: 'SluiceWarning', code: 'ERR_MY_DOWN' },
        ],
        [
          'myStore: the backend answers again (see https://github.com/sluice-js/sluice/blob/main/docs/warnings/ERR_MY_RECOVERED.md)',
          { type: 'SluiceWarning', code: 'ERR_MY_RECOVERED' },
        ],
      ])
    } finally {
      warn.mockRestore()
    }
  })

  it('a hook that throws never turns a decision into an error', () => {
    const { health: h } = health({
      onFailure: () => {
        throw new Error('hook')
      },
      onRecovery: () => {
        throw new Error('hook')
      },
    })
    expect(() => h.fail('a', 'k', failure, h.episode)).not.toThrow()
    expect(() => h.answered('a')).not.toThrow()
    expect(events.map((e) => e.event)).toEqual(['failure', 'recovery'])
  })
})
