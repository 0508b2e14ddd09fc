import { memoryStore } from '@sluice/keyed'
import { makePolicy, readRemoteStoreOptions } from '@sluice/keyed/store'
import { describe, expect, it } from 'vitest'
import { clientStore } from '../src/client'
import type { ClusterStoreError } from '../src/errors'
import { Connection, Host } from '../src/host'
import type { Connect } from '../src/links'
import { type Batch, MAX_POLICY_REFS, type Request, TAG } from '../src/protocol'

/**
 * A worker's store and the host in this process, the messages going through JSON as over
 * IPC: the host's view of the connection stays in reach.
 */
function inProcess() {
  const host = new Host(memoryStore({ maxKeys: 100_000 }))
  const connection = new Connection()
  /** Names of the policies defined on the wire, in order. */
  const defined: string[] = []
  const connect: Connect = (handlers) => ({
    open: true,
    send(requests) {
      for (const request of requests) {
        if (!('policies' in request) || request.policies === null) continue
        for (const policy of request.policies)
          if (typeof policy !== 'number') defined.push(policy.name)
      }
      const batch: Batch<Request> = JSON.parse(
        JSON.stringify({ tag: TAG, store: 't', batch: requests }),
      )
      const reply = JSON.parse(JSON.stringify(host.answer(connection, batch)))
      queueMicrotask(() => handlers.receive(reply))
    },
    close() {},
  })
  const settings = readRemoteStoreOptions<ClusterStoreError>(
    'clusterStore',
    { onError: 'deny' },
    {
      timeout: '10s',
    },
  )
  return { worker: clientStore('clusterStore', connect, settings), connection, defined }
}

describe('clusterStore: what the host keeps per worker', () => {
  it(`keeps at most ${MAX_POLICY_REFS} policy definitions per worker, however many policies it makes`, async () => {
    const { worker, connection } = inProcess()
    const plans = Array.from({ length: 3 * MAX_POLICY_REFS }, (_, i) =>
      makePolicy({ algorithm: 'fixed-window', limit: 10 + i, window: 3_600_000 }, `plan-${i}`),
    )
    for (const plan of plans) expect((await worker.take('k', [plan], 1)).allowed).toBe(true)
    expect(connection.size).toBe(MAX_POLICY_REFS)
    // A policy whose number went to another is defined again: each still decides by its own spec.
    for (const i of [0, 1, MAX_POLICY_REFS, 3 * MAX_POLICY_REFS - 1]) {
      const plan = plans[i]!
      expect((await worker.take('k', [plan], 2)).results[0]!.remaining).toBe(10 + i - 3)
    }
    expect(connection.size).toBe(MAX_POLICY_REFS)
  })

  it('a hot policy keeps its number while others come and go', async () => {
    const { worker, connection, defined } = inProcess()
    const hot = makePolicy(
      { algorithm: 'fixed-window', limit: 1_000_000, window: 3_600_000 },
      'hot',
    )
    for (let i = 0; i < 2 * MAX_POLICY_REFS; i++) {
      await worker.take('k', [hot], 1)
      const cold = makePolicy(
        { algorithm: 'fixed-window', limit: 5, window: 3_600_000 },
        `cold-${i}`,
      )
      await worker.take('k', [cold], 1)
    }
    expect((await worker.take('k', [hot], 1)).results[0]!.remaining).toBe(
      1_000_000 - 2 * MAX_POLICY_REFS - 1,
    )
    expect(connection.size).toBe(MAX_POLICY_REFS)
    expect(defined.filter((name) => name === 'hot')).toEqual(['hot'])
  })

  it('refuses a policy number out of range', () => {
    const host = new Host(memoryStore())
    const connection = new Connection()
    const spec = makePolicy({ algorithm: 'fixed-window', limit: 5, window: 1000 }, 'p').spec
    const reply = host.answer(connection, {
      tag: TAG,
      store: 't',
      batch: [
        { id: 1, op: 'get', key: 'k', policies: [{ ref: MAX_POLICY_REFS + 1, name: 'p', spec }] },
      ],
    })
    expect(reply.batch[0]).toEqual({
      id: 1,
      error: `policy number ${MAX_POLICY_REFS + 1} is not between 1 and ${MAX_POLICY_REFS}`,
    })
  })
})
