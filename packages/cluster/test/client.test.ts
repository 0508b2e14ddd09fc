import { memoryStore } from '@sluice/keyed'
import { makePolicy, readRemoteStoreOptions } from '@sluice/keyed/store'
import { describe, expect, it } from 'vitest'
import { clientStore } from '../src/client'
import type { ClusterStoreError } from '../src/errors'
import { Connection, Host } from '../src/host'
import type { Connect } from '../src/links'
import { type Batch, MAX_POLICY_REFS, type Reply, type Request, TAG } from '../src/protocol'

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

describe('clusterStore: a host that does not answer', () => {
  it('fails each call at its own deadline, with the timeout code, and answers the next ones', async () => {
    const host = new Host(memoryStore())
    const connection = new Connection()
    // A host stalled (its event loop busy elsewhere): requests wait, in order, until it answers.
    let answering = false
    const held: (readonly Request[])[] = []
    let receive: (reply: Batch<Reply>) => void = () => {}
    const deliver = () => {
      for (const requests of held.splice(0)) {
        const reply = host.answer(connection, { tag: TAG, store: 't', batch: requests })
        queueMicrotask(() => receive(reply))
      }
    }
    const connect: Connect = (handlers) => {
      receive = handlers.receive
      return {
        open: true,
        send(requests) {
          held.push(requests)
          if (answering) deliver()
        },
        close() {},
      }
    }
    const failures: ClusterStoreError[] = []
    const settings = readRemoteStoreOptions<ClusterStoreError>(
      'clusterStore',
      {
        onError: 'deny',
        timeout: '30ms',
        probeInterval: '20ms',
        onFailure: (f) => failures.push(f),
      },
      { timeout: '1s' },
    )
    const worker = clientStore('clusterStore', connect, settings)
    const policy = makePolicy({ algorithm: 'fixed-window', limit: 5, window: 3_600_000 }, 'p')
    const first = worker.take('k', [policy], 1)
    await new Promise((resolve) => setTimeout(resolve, 10))
    const second = worker.take('k', [policy], 1)
    const refusals = await Promise.all([first, second])
    // onError 'deny': each unanswered call is refused once its own deadline passed.
    expect(refusals.map((r) => r.allowed)).toEqual([false, false])
    expect(worker.status).toBe('down')
    // Reported once its probe (a call of its own) timed out too.
    await expect
      .poll(() => failures.map((f) => f.code), { timeout: 10_000 })
      .toEqual(['ERR_SLUICE_CLUSTER_TIMEOUT'])
    // Once it answers, the probe finds it and calls go to it again.
    answering = true
    deliver()
    await expect.poll(() => worker.status, { timeout: 10_000 }).toBe('up')
    // The two late requests took their permits when the host got to them.
    expect((await worker.take('k', [policy], 1)).results[0]!.remaining).toBe(2)
  })
})

describe('clusterStore: a request that never reached the host', () => {
  it('defines its policies again on the next call', async () => {
    const host = new Host(memoryStore())
    const connection = new Connection()
    let failNext = true
    const connect: Connect = (handlers) => ({
      open: true,
      send(requests) {
        if (failNext) {
          failNext = false
          // A write that failed: the definitions in it never arrived.
          throw new Error('EPIPE')
        }
        const reply = host.answer(connection, { tag: TAG, store: 't', batch: requests })
        queueMicrotask(() => handlers.receive(reply))
      },
      close() {},
    })
    const settings = readRemoteStoreOptions<ClusterStoreError>(
      'clusterStore',
      { onError: 'deny', onFailure: () => {} },
      { timeout: '10s' },
    )
    const worker = clientStore('clusterStore', connect, settings)
    const policy = makePolicy({ algorithm: 'fixed-window', limit: 5, window: 3_600_000 }, 'p')
    expect((await worker.take('k', [policy], 1)).allowed).toBe(false)
    await expect.poll(() => worker.status, { timeout: 10_000 }).toBe('up')
    expect((await worker.take('k', [policy], 1)).results[0]!.remaining).toBe(4)
  })

  it('a host that does not know a number says so, and the worker defines its policies again', () => {
    const host = new Host(memoryStore())
    const reply = host.answer(new Connection(), {
      tag: TAG,
      store: 't',
      batch: [{ id: 7, op: 'get', key: 'k', policies: [3] }],
    })
    expect(reply.batch[0]).toEqual({
      id: 7,
      error: 'policy 3 was never defined',
      unknownPolicy: true,
    })
  })
})
