import type { Cost, Lease, Policy, TakeResult } from '@sluice/keyed'
import {
  checkBlock,
  checkCost,
  Fallback,
  fromWire,
  type RemoteStoreSettings,
  StoreHealth,
  type WireTake,
} from '@sluice/keyed/store'
import { type ClusterStore, ClusterStoreError } from './errors'
import type { Connect, Link, LinkHandlers } from './links'
import { MAX_POLICY_REFS, type Request, toWireReceipts, type WirePolicy } from './protocol'

/** Omit over each member of a union (the built-in one merges them). */
type Call = Request extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never

interface Pending {
  readonly resolve: (value: WireTake | null) => void
  readonly reject: (error: ClusterStoreError) => void
  /** `performance.now()` after which it has failed. */
  readonly deadline: number
}

/**
 * A worker's side: requests to the host over a {@link Link}, each answered within
 * `timeoutMs` or failed. A closed link fails what it still owed, and the next call opens a
 * new one (IPC's next one is closed too: a worker's channel to the primary never comes back).
 */
class Client {
  readonly #connect: Connect
  readonly #timeoutMs: number
  readonly #pending = new Map<number, Pending>()
  #seq = 0
  #link: Link | undefined
  /**
   * Each policy's number on the current link (the host keeps definitions per connection),
   * least recently used first: past {@link MAX_POLICY_REFS} the first one's number is
   * given to the next policy.
   */
  #refs = new Map<Policy, number>()
  /** The last policy of `#refs` (a hot policy is not moved on every call). */
  #latest: Policy | undefined
  #refSeq = 0
  /**
   * One timer for every request's deadline (a timer per request cost more than the rest
   * of a call): armed for the oldest request, referenced while any is unanswered.
   */
  #deadlines: ReturnType<typeof setTimeout> | undefined
  /** Requests of this turn of the event loop, sent together at its end. */
  #queue: Request[] = []
  #flushing = false
  closed = false

  constructor(connect: Connect, timeoutMs: number) {
    this.#connect = connect
    this.#timeoutMs = timeoutMs
  }

  policies(policies: readonly Policy[]): WirePolicy[] {
    return policies.map((policy) => {
      const refs = this.#refs
      const known = refs.get(policy)
      if (known !== undefined) {
        // Most recently used last. Requests reach the host in the order they are built, so
        // a number given to another policy is redefined after the calls that used it.
        if (policy !== this.#latest) {
          refs.delete(policy)
          refs.set(policy, known)
          this.#latest = policy
        }
        return known
      }
      let ref: number
      if (refs.size < MAX_POLICY_REFS) ref = ++this.#refSeq
      else {
        const [oldest, freed] = refs.entries().next().value as [Policy, number]
        refs.delete(oldest)
        ref = freed
      }
      refs.set(policy, ref)
      this.#latest = policy
      const { name, spec, block, carry } = policy
      return {
        ref,
        name,
        spec,
        ...(block === undefined ? {} : { block }),
        ...(carry === undefined ? {} : { carry }),
      }
    })
  }

  /** The link, opened when there is none: policies are defined again on a new one. */
  link(): Link {
    let link = this.#link
    if (link === undefined || !link.open) {
      if (link !== undefined) this.#forgetPolicies()
      link = this.#connect(this.#handlers)
      this.#link = link
    }
    return link
  }

  call(build: (client: this) => Call): Promise<WireTake | null> {
    if (this.closed) {
      return Promise.reject(
        new ClusterStoreError('ERR_SLUICE_CLUSTER_CLOSED', 'the store was closed'),
      )
    }
    const link = this.link()
    if (!link.open) {
      return Promise.reject(
        new ClusterStoreError(
          'ERR_SLUICE_CLUSTER_CLOSED',
          'the channel to the process that holds the state is closed',
        ),
      )
    }
    // Built after link(): a new link has forgotten the policies' numbers.
    const id = ++this.#seq
    const request = build(this) as unknown as { id: number }
    request.id = id
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, deadline: performance.now() + this.#timeoutMs })
      this.#watch()
      this.#queue.push(request as Request)
      if (this.#flushing) return
      // The first call of a turn goes at once (no wait for a lone decision); the calls
      // made after it in the same turn go together when it ends, after every promise
      // continuation of the turn.
      this.#flushing = true
      this.#flush()
      setImmediate(this.#endTurn)
    })
  }

  /** The next calls define their policies again (the host may not have their definitions). */
  #forgetPolicies(): void {
    this.#refs = new Map()
    this.#latest = undefined
    this.#refSeq = 0
  }

  /** Makes sure the deadline timer runs and keeps the process alive: a request is unanswered. */
  #watch(): void {
    const timer = this.#deadlines
    if (timer === undefined) this.#arm(this.#timeoutMs)
    else if (!timer.hasRef()) timer.ref()
  }

  #arm(ms: number): void {
    this.#deadlines = setTimeout(this.#expire, Math.max(0, ms))
  }

  /** Fails the requests past their deadline (the oldest first: ids are in deadline order). */
  readonly #expire = () => {
    this.#deadlines = undefined
    const now = performance.now()
    for (const [id, pending] of this.#pending) {
      if (pending.deadline > now) {
        this.#arm(pending.deadline - now)
        return
      }
      this.#pending.delete(id)
      pending.reject(
        new ClusterStoreError(
          'ERR_SLUICE_CLUSTER_TIMEOUT',
          `the process that holds the state did not answer within ${this.#timeoutMs} ms`,
        ),
      )
    }
  }

  /** Nothing unanswered: the timer goes on (to be reused) without keeping the process alive. */
  #idle(): void {
    if (this.#pending.size === 0) this.#deadlines?.unref()
  }

  readonly #endTurn = () => {
    this.#flushing = false
    if (this.#queue.length !== 0) this.#flush()
  }

  #flush(): void {
    const requests = this.#queue
    this.#queue = []
    const link = this.#link
    try {
      if (link === undefined || !link.open) throw new Error('the channel closed')
      link.send(requests)
    } catch (error) {
      this.#handlers.failed(requests, error as Error)
    }
  }

  /** Lets the calls already made (a lease's last refunds) be sent and answered, then closes. */
  async close(): Promise<void> {
    const turn = () => new Promise((resolve) => setImmediate(resolve))
    await turn()
    while (this.#queue.length !== 0 || this.#pending.size !== 0) await turn()
    this.closed = true
    this.#link?.close()
  }

  readonly #handlers: LinkHandlers = {
    receive: (replies) => {
      for (const reply of replies.batch) {
        if ('error' in reply && reply.unknownPolicy === true) this.#forgetPolicies()
        const pending = this.#pending.get(reply.id)
        if (pending === undefined) continue
        this.#pending.delete(reply.id)
        if ('error' in reply) {
          pending.reject(
            new ClusterStoreError('ERR_SLUICE_CLUSTER', `the host failed: ${reply.error}`),
          )
        } else {
          pending.resolve(reply.value)
        }
      }
      this.#idle()
    },
    failed: (requests, error) => {
      // Requests that never left may have carried definitions the next ones rely on.
      this.#forgetPolicies()
      const failure = new ClusterStoreError(
        'ERR_SLUICE_CLUSTER_CLOSED',
        `could not send: ${error.message}`,
        { cause: error },
      )
      for (const { id } of requests) {
        const pending = this.#pending.get(id)
        if (pending === undefined) continue
        this.#pending.delete(id)
        pending.reject(failure)
      }
      this.#idle()
    },
    closed: () => {
      const error = new ClusterStoreError(
        'ERR_SLUICE_CLUSTER_CLOSED',
        'the channel to the process that holds the state closed',
      )
      for (const pending of this.#pending.values()) pending.reject(error)
      this.#pending.clear()
      this.#idle()
    },
  }
}

/**
 * The Store protocol in a worker: each call is one request to the host; while the host is
 * away (no answer within `timeout`, the channel closed) decisions follow `onError`, by
 * the same `StoreHealth` and `Fallback` as every remote store, the host pinged every
 * `probeInterval` until it answers.
 */
export function clientStore(
  factory: string,
  connect: Connect,
  settings: RemoteStoreSettings<ClusterStoreError>,
): ClusterStore {
  const client = new Client(connect, settings.timeoutMs)
  const health = new StoreHealth<0, ClusterStoreError>({
    store: factory,
    onError: settings.onError,
    probeMs: settings.probeMs,
    onFailure: settings.onFailure,
    onRecovery: settings.onRecovery,
    probe: () => client.call(() => ({ op: 'ping' })),
    live: () => !client.closed,
    warnings: {
      down: 'ERR_SLUICE_CLUSTER_DOWN',
      until: 'the process that holds the state answers again',
      recovered: 'ERR_SLUICE_CLUSTER_RECOVERED',
      recovery: 'the process that holds the state answers again; decisions are back on it',
    },
  })
  const fallback = new Fallback(settings)

  async function call(key: string, build: (c: Client) => Call): Promise<WireTake | null> {
    const since = health.episode
    try {
      const reply = await client.call(build)
      health.answered(0)
      return reply
    } catch (error) {
      // A store closed on purpose is no outage.
      if (!client.closed) health.fail(0, key, error as ClusterStoreError, since)
      throw error
    }
  }

  async function decide<T>(
    key: string,
    build: (c: Client) => Call,
    decode: (reply: WireTake | null) => T,
    answerHere: () => Promise<T>,
  ): Promise<T> {
    if (health.outOfUse(0)) return answerHere()
    let reply: WireTake | null
    try {
      reply = await call(key, build)
    } catch {
      return answerHere()
    }
    return decode(reply)
  }

  const results = (policies: readonly Policy[]) => (reply: WireTake | null) =>
    decodeTake(reply, policies).results

  return {
    role: 'worker',
    // The host's memory store keeps a policy's state by name and carries it over.
    carries: true,
    get status() {
      return health.status
    },

    close() {
      return client.close()
    },

    async take(key: string, policies: readonly Policy[], cost: Cost) {
      checkCost(`${factory}.take`, cost, policies.length)
      if (policies.length === 0) return { allowed: true, results: [] }
      return decide(
        key,
        (c) => ({ op: 'take', key, policies: c.policies(policies), cost }),
        (reply) => decodeTake(reply, policies),
        () => fallback.take(key, policies, cost),
      )
    },

    async refund(
      key: string,
      policies: readonly Policy[],
      cost: Cost,
      receipts?: readonly (number | undefined)[],
    ) {
      checkCost(`${factory}.refund`, cost, policies.length)
      if (policies.length === 0) return
      if (await fallback.refund(key, policies, cost, receipts, () => health.outOfUse(0))) return
      await call(key, (c) => ({
        op: 'refund',
        key,
        policies: c.policies(policies),
        cost,
        receipts: toWireReceipts(receipts),
      })).catch(() => {})
    },

    async force(key: string, policies: readonly Policy[], cost: Cost) {
      checkCost(`${factory}.force`, cost, policies.length)
      if (policies.length === 0) return []
      return decide(
        key,
        (c) => ({ op: 'force', key, policies: c.policies(policies), cost }),
        results(policies),
        () => fallback.force(key, policies, cost),
      )
    },

    /** A refund and then a force in one message: a settle is one round trip to the host. */
    async settle(
      key: string,
      policies: readonly Policy[],
      back: Cost,
      more: Cost,
      receipts?: readonly (number | undefined)[],
    ) {
      checkCost(`${factory}.settle`, back, policies.length)
      checkCost(`${factory}.settle`, more, policies.length)
      if (policies.length === 0) return []
      // What the fallback took (or all of it while the host is away) is given back there.
      if (await fallback.refund(key, policies, back, receipts, () => health.outOfUse(0))) {
        return this.force(key, policies, more)
      }
      return decide(
        key,
        (c) => ({
          op: 'settle',
          key,
          policies: c.policies(policies),
          back,
          more,
          receipts: toWireReceipts(receipts),
        }),
        results(policies),
        () => fallback.force(key, policies, more),
      )
    },

    async block(key: string, policies: readonly Policy[], ms: number) {
      checkBlock(`${factory}.block`, ms)
      if (policies.length === 0) return
      await fallback.block(key, policies, ms)
      await call(key, (c) => ({ op: 'block', key, policies: c.policies(policies), ms }))
    },

    async release(key: string, policy: Policy, lease: Lease) {
      if (await fallback.release(key, policy, lease)) return
      // Tried even while down: a slot freed now beats one held until the worker ends.
      await call(key, (c) => ({
        op: 'release',
        key,
        policies: c.policies([policy]) as [WirePolicy],
        lease: lease.id,
      })).catch(() => {})
    },

    async get(key: string, policies: readonly Policy[]) {
      if (policies.length === 0) return []
      return decide(
        key,
        (c) => ({ op: 'get', key, policies: c.policies(policies) }),
        results(policies),
        () => fallback.get(key, policies),
      )
    },

    async reset(key: string, policies?: readonly Policy[]) {
      await fallback.reset(key, policies)
      await call(key, (c) => ({
        op: 'reset',
        key,
        policies: policies === undefined ? null : c.policies(policies),
      }))
    },

    async resetAll() {
      await fallback.resetAll()
      await call('', () => ({ op: 'resetAll' }))
    },
  }
}

/** The host's answer for `policies`; one of another shape is an error of the store's. */
function decodeTake(reply: WireTake | null, policies: readonly Policy[]): TakeResult {
  const taken = fromWire(reply, policies)
  if (taken === undefined) {
    throw new ClusterStoreError('ERR_SLUICE_CLUSTER', `unexpected answer ${JSON.stringify(reply)}`)
  }
  return taken
}
