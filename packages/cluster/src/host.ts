import type { Lease, MemoryStore, Policy, PolicyResult, TakeBuffer } from '@sluice/keyed'
import { makePolicy, type WireResult, type WireTake } from '@sluice/keyed/store'
import {
  type Batch,
  fromWireReceipts,
  MAX_POLICY_REFS,
  type Reply,
  type Request,
  TAG,
  type WirePolicy,
} from './protocol'

/** A request named a policy number this connection never defined (or whose definition was lost). */
class UnknownPolicy extends Error {
  constructor(ref: number) {
    super(`policy ${ref} was never defined`)
  }
}

/** A slot a worker holds: what its release (or the worker's end) gives back. */
interface HeldSlot {
  readonly key: string
  readonly policy: Policy
  readonly lease: Lease
}

/**
 * One worker as the host sees it (a `node:cluster` worker, or a socket of a PM2
 * instance): the policies it defined and the slots it holds.
 */
export class Connection {
  /** By number, at most {@link MAX_POLICY_REFS}: a definition under a number in use replaces it. */
  readonly #policies = new Map<number, Policy>()
  readonly slots = new Map<string, HeldSlot>()

  /** How many policies this connection has defined and not replaced. */
  get size(): number {
    return this.#policies.size
  }

  policies(wire: readonly WirePolicy[]): Policy[] {
    return wire.map((entry) => {
      if (typeof entry === 'number') {
        const known = this.#policies.get(entry)
        if (known === undefined) throw new UnknownPolicy(entry)
        return known
      }
      const { ref } = entry
      if (!(Number.isInteger(ref) && ref >= 1 && ref <= MAX_POLICY_REFS)) {
        throw new Error(`policy number ${ref} is not between 1 and ${MAX_POLICY_REFS}`)
      }
      const policy = makePolicy(entry.spec, entry.name, entry.block, entry.carry)
      this.#policies.set(ref, policy)
      return policy
    })
  }
}

/**
 * The state every worker shares: a memory store in the hosting process, answering each
 * worker's requests synchronously (one decision at a time, so exact), and keeping which
 * worker holds which concurrency slot, so that a worker's end frees them.
 */
export class Host {
  readonly memory: MemoryStore
  #leaseSeq = 0
  /**
   * The memory store's answer to a take, written into this one buffer: read into the reply
   * at once, so a decision leaves only its reply behind (the host's garbage is every
   * worker's pause).
   */
  readonly #taken: TakeBuffer = { allowed: false, results: [] }

  constructor(memory: MemoryStore) {
    this.memory = memory
  }

  /** Answers a batch of requests of `connection`, in order, in one batch. */
  answer(connection: Connection, requests: Batch<Request>): Batch<Reply> {
    const batch = requests.batch.map((request): Reply => {
      const { id } = request
      try {
        return { id, value: this.#run(connection, request) }
      } catch (error) {
        if (error instanceof UnknownPolicy) return { id, error: error.message, unknownPolicy: true }
        return { id, error: error instanceof Error ? error.message : String(error) }
      }
    })
    return { tag: TAG, store: requests.store, batch }
  }

  /** A worker is gone (exited, killed, disconnected): the slots it held are free again. */
  closed(connection: Connection): void {
    for (const { key, policy, lease } of connection.slots.values()) {
      this.memory.release(key, policy, lease)
    }
    connection.slots.clear()
  }

  #run(connection: Connection, request: Request): WireTake | null {
    const memory = this.memory
    switch (request.op) {
      case 'take': {
        const policies = connection.policies(request.policies)
        const taken = memory.take(request.key, policies, request.cost, this.#taken)
        return this.#wire(connection, request.key, taken.allowed, taken.results, policies.length)
      }
      case 'force': {
        const policies = connection.policies(request.policies)
        return this.#wire(
          connection,
          request.key,
          true,
          memory.force(request.key, policies, request.cost),
        )
      }
      case 'get': {
        const policies = connection.policies(request.policies)
        return this.#wire(connection, request.key, true, memory.get(request.key, policies))
      }
      case 'refund': {
        const policies = connection.policies(request.policies)
        memory.refund(request.key, policies, request.cost, fromWireReceipts(request.receipts))
        return null
      }
      case 'settle': {
        const policies = connection.policies(request.policies)
        memory.refund(request.key, policies, request.back, fromWireReceipts(request.receipts))
        return this.#wire(
          connection,
          request.key,
          true,
          memory.force(request.key, policies, request.more),
        )
      }
      case 'block':
        memory.block(request.key, connection.policies(request.policies), request.ms)
        return null
      case 'release': {
        const [policy] = connection.policies(request.policies)
        const held = connection.slots.get(request.lease)
        if (held === undefined) return null
        connection.slots.delete(request.lease)
        memory.release(request.key, policy!, held.lease)
        return null
      }
      case 'reset':
        memory.reset(
          request.key,
          request.policies === null ? undefined : connection.policies(request.policies),
        )
        return null
      case 'resetAll':
        memory.resetAll()
        return null
      case 'ping':
        return null
    }
  }

  /**
   * Results as JSON carries them (`toWire` of `@sluice/keyed/store`: a wait of never is
   * null), the first `n`, each slot taken recorded as the connection's under an id of the
   * host's.
   */
  #wire(
    connection: Connection,
    key: string,
    allowed: boolean,
    results: readonly PolicyResult[],
    n = results.length,
  ): WireTake {
    const wire = new Array<WireResult>(n)
    for (let i = 0; i < n; i++) {
      const result = results[i]!
      const out: { -readonly [K in keyof WireResult]: WireResult[K] } = {
        allowed: result.allowed,
        remaining: result.remaining,
        resetMs: Number.isFinite(result.resetMs) ? result.resetMs : null,
        retryAfterMs: Number.isFinite(result.retryAfterMs) ? result.retryAfterMs : null,
      }
      if (result.lease !== undefined) {
        const id = String(++this.#leaseSeq)
        connection.slots.set(id, { key, policy: result.policy, lease: result.lease })
        out.lease = { id, permits: result.lease.permits }
      }
      if (result.receipt !== undefined) out.receipt = result.receipt
      if (result.blocked === true) out.blocked = true
      wire[i] = out
    }
    return { allowed, results: wire }
  }
}
