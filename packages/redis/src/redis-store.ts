import { randomUUID } from 'node:crypto'
import type { Clock } from '@sluice/core'
import { micros } from '@sluice/core/internal'
import { rangeError } from '@sluice/core/validation'
import {
  type AsyncStore,
  type Cost,
  type Lease,
  type Policy,
  type PolicyResult,
  type Store,
  type TakeBuffer,
  type TakeResult,
  withLeases,
} from '@sluice/keyed'
import { checkBlock, checkCost, Fallback, StoreHealth } from '@sluice/keyed/store'
import type { SendCommand } from './client'
import { hashSlot, type Topology, topologyOf } from './cluster'
import {
  decodeGeneral,
  decodeSingle,
  type GeneralCall,
  generalArgs,
  generalKeys,
  leaseMember,
  type PolicyPlan,
  planPolicy,
  receiptArgs,
  singleArgs,
} from './codec'
import { type Connection, connectionOf } from './connection'
import { isKeyLevel, isWrongType, type RedisStoreError, toStoreError } from './errors'
import { keyTag } from './keys'
import { FACTORY, type RedisStoreOptions, readStoreSettings, type StoreSettings } from './options'
import { PendingReleases } from './pending-releases'
import { RedisClock } from './redis-clock'
import { ScriptRunner } from './script-runner'
import { GENERAL } from './scripts'
import { TakeBatch } from './take-batch'

/**
 * A store whose state lives in Redis, shared by every process that uses the same Redis and
 * prefix. Every method answers with a promise.
 *
 * @example
 * ```ts
 * const store: RedisStore = redisStore({ client: new Redis() })
 * app.get('/health', (req, res) => res.json({ redis: store.status }))
 * ```
 */
export interface RedisStore extends AsyncStore {
  /**
   * Deletes every key under the store's prefix (`SCAN` in batches and `UNLINK`, never
   * `KEYS`; on an ioredis Cluster, on every master), and forgets the `onError: 'local'`
   * store's state. Rejects with a {@link RedisStoreError} when Redis fails.
   */
  resetAll(): Promise<void>
  /**
   * `'up'` while every decision goes to Redis; `'down'` from a failed call until a probe
   * of the failed shard answers (on a Cluster, the other shards keep deciding on Redis).
   */
  readonly status: 'up' | 'down'
}

// A take with a lease carries a deadline (on Redis's clock, as estimated) this long past
// its caller's timeout: a client that replays it later (ioredis Cluster re-sends through
// a failover) takes nothing. Its lease's release, queued when the call failed, waits
// twice as long, so that it cannot reach Redis before the take it undoes.
const DEADLINE_SLACK_MS = 1_000
const EMPTY: TakeResult = { allowed: true, results: [] }

/**
 * A {@link Store} on Redis (or Valkey, or Redis Cluster): every process using the same Redis and
 * `prefix` shares one budget per policy and client key. Each decision is one EVALSHA: a
 * small script per algorithm for a request checked against one policy (the common case:
 * an admitted take is a GET and a SET inside it), a general script for several policies
 * (all or none), costs per policy, warm-up, bulkheads, penalties, force and block, all on
 * Redis's own clock. The scripts are ports of `@sluice/core`'s kernels: every result is
 * the memory store's, field for field. Keys expire once their state is back to fresh.
 *
 * A failing or slow Redis never hangs a request: each call gives up after `timeout`, its
 * shard is taken out of use and probed at once with a command routed by the key that
 * failed; a confirmed outage is reported once (`onFailure`, a `SluiceWarning`, the
 * `sluice:store` channel), and until a probe answers, the decisions of that shard are
 * answered by the `onError` policy.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis'
 * import { rateLimit } from '@sluice/express'
 * import { redisStore } from '@sluice/redis'
 *
 * const client = new Redis({ enableOfflineQueue: false })
 * client.on('error', () => {}) // the store reports outages; ioredis would log every retry
 * const store = redisStore({ client, onError: 'local' })
 * app.use(rateLimit({ limit: 100, window: '1m', store }))
 * ```
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  const settings = readStoreSettings(options)
  const store = new RedisBackedStore(settings)
  const { lease, clock } = settings
  if (lease === undefined) return store
  // Leases end on the test's clock too when one is given; the wrapper keeps `status` and
  // answers with promises, as a RedisStore does.
  return withLeases(
    store,
    clock && !lease.clock ? { ...lease, clock } : lease,
    FACTORY,
  ) as unknown as RedisStore
}

class RedisBackedStore implements RedisStore {
  /**
   * A policy's state is keyed by its name and algorithm, with the spec that wrote it kept
   * beside it: the scripts carry it over to a changed spec on the key's next touch
   * (lib/record.lua), so `reconfigure` is allowed.
   */
  readonly carries = true
  readonly #prefix: string
  readonly #leaseTtlMs: number
  /** How often releases that wait for Redis are sent again. */
  readonly #probeMs: number
  readonly #runner: ScriptRunner
  /** One-policy takes on one key in the same tick, as one call. */
  readonly #batch: TakeBatch
  readonly #topology: Topology
  readonly #connection: Connection
  /** Per shard: a Cluster master's address, or one name for a standalone Redis. */
  readonly #health: StoreHealth<string, RedisStoreError>
  /** What decisions get while their shard is out of use (`onError`). */
  readonly #fallback: Fallback
  /** A test's clock (the `clock` option), sent with every call; else Redis's own. */
  readonly #testClock: Clock | undefined
  readonly #redisClock = new RedisClock()
  readonly #releases = new PendingReleases()
  readonly #plans = new WeakMap<Policy, PolicyPlan | RangeError | TypeError>()
  #flushTimer: ReturnType<typeof setTimeout> | undefined

  constructor(settings: StoreSettings) {
    this.#prefix = settings.prefix
    this.#leaseTtlMs = settings.leaseTtlMs
    this.#probeMs = settings.probeMs
    this.#testClock = settings.clock
    this.#connection = connectionOf(settings.client)
    this.#runner = new ScriptRunner(settings.send, settings.timeoutMs, this.#connection)
    this.#batch = new TakeBatch(this.#runner)
    this.#topology = topologyOf(settings.client, settings.send)
    this.#fallback = new Fallback(settings)
    // A failed shard is probed at once, in the background, with a command routed by the key
    // that failed: a keyless PING would reach any healthy master of a Cluster and declare
    // recovery while the failed one is still down.
    this.#health = new StoreHealth({
      ...settings, // onError, probeMs, onFailure, onRecovery
      store: FACTORY,
      warnings: {
        down: 'ERR_SLUICE_REDIS_DOWN',
        until: 'it answers again',
        recovered: 'ERR_SLUICE_REDIS_RECOVERED',
        recovery: 'Redis answers again; decisions are back on Redis',
      },
      probe: (_shard, key) =>
        this.#runner.call(['EXISTS', key], key).catch((error: unknown) => {
          this.#topology.refresh()
          throw error
        }),
      live: () => !this.#connection.ended(),
      recovered: () => void this.#flush(),
    })
  }

  get status(): 'up' | 'down' {
    return this.#health.status
  }

  take(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    _into?: TakeBuffer,
  ): Promise<TakeResult> {
    // Not async, to spare the one-policy path a promise; a bad argument still rejects.
    try {
      if (policies.length === 1 && typeof cost === 'number') {
        if (!(cost >= 1 && Number.isSafeInteger(cost))) checkCost('redisStore.take', cost, 1)
        const plan = this.#plan(policies[0]!)
        if (plan.single !== undefined) return this.#takeOne(key, plan, cost, false)
        return this.#takeMany(key, [plan], [cost], cost, false)
      }
      checkCost('redisStore.take', cost, policies.length)
      if (policies.length === 0) return Promise.resolve(EMPTY)
      return this.#takeMany(
        key,
        this.#plansOf(policies),
        costsOf(cost, policies.length),
        cost,
        false,
      )
    } catch (error) {
      return Promise.reject(error)
    }
  }

  async #takeOne(
    key: string,
    plan: PolicyPlan,
    cost: number,
    retried: boolean,
  ): Promise<TakeResult> {
    const redisKey = keyTag(this.#prefix, key) + plan.suffix
    if (this.#health.anyDown && this.#isDown(redisKey)) {
      return this.#fallback.take(key, [plan.policy], cost)
    }
    const since = this.#health.episode
    let result: PolicyResult
    try {
      const args = singleArgs(plan, redisKey, this.#time(), cost)
      // Batched with this tick's other takes on the key; a retry goes alone.
      const sender = retried ? this.#runner : this.#batch
      const reply = await sender.script(plan.single!.script, args, redisKey, performance.now())
      result = decodeSingle(reply, plan)
    } catch (error) {
      if (!retried && isWrongType(error) && (await this.#clear([redisKey]))) {
        return this.#takeOne(key, plan, cost, true)
      }
      this.#failed(error, redisKey, since, false)
      return this.#fallback.take(key, [plan.policy], cost)
    }
    return { allowed: result.allowed, results: [result] }
  }

  async #takeMany(
    key: string,
    plans: readonly PolicyPlan[],
    costs: readonly number[],
    cost: Cost,
    retried: boolean,
  ): Promise<TakeResult> {
    const tag = keyTag(this.#prefix, key)
    const keys = generalKeys(tag, plans)
    if (this.#health.anyDown && this.#isDown(keys[0]!)) {
      return this.#fallback.take(key, policiesOf(plans), cost)
    }
    const leases = plans.filter((plan, i) => plan.concurrency && costs[i]! > 0)
    const leaseId = leases.length === 0 ? '' : randomUUID()
    const timeoutMs = this.#runner.timeoutMs
    const sentAt = performance.now()
    const deadlineUs =
      leases.length !== 0 && !retried
        ? this.#nowUs(sentAt) + (timeoutMs + DEADLINE_SLACK_MS) * 1000
        : 0
    const since = this.#health.episode
    let reply: ReturnType<typeof decodeGeneral>
    try {
      const call: GeneralCall = { op: 'take', time: this.#time(), leaseId, deadlineUs }
      const args = generalArgs(call, keys, plans, costs)
      reply = decodeGeneral(
        await this.#runner.script(GENERAL, args, keys[0]!, sentAt),
        plans,
        costs,
        leaseId,
      )
    } catch (error) {
      // The take may still reach Redis (or have, its answer lost): undo its leases once
      // Redis answers, after its deadline, so that the undo cannot come first.
      plans.forEach((plan, i) => {
        if (!plan.concurrency || costs[i] === 0) return
        const notBefore = sentAt + timeoutMs + 2 * DEADLINE_SLACK_MS
        const member = leaseMember({ id: leaseId, permits: costs[i]! })
        this.#releases.add(tag + plan.suffix, member, notBefore)
      })
      this.#scheduleFlush()
      if (!retried && isWrongType(error) && (await this.#clear(keys))) {
        return this.#takeMany(key, plans, costs, cost, true)
      }
      this.#failed(error, keys[0]!, since, keys.length > 1)
      return this.#fallback.take(key, policiesOf(plans), cost)
    }
    this.#redisClock.sample(reply.now, sentAt, performance.now())
    // Past the deadline by Redis's clock, though this caller is still waiting: the
    // estimate of that clock was off (a node whose clock runs ahead). Once more, without.
    if (reply.taken === -1) return this.#takeMany(key, plans, costs, cost, true)
    return { allowed: reply.taken === 1, results: reply.results }
  }

  async refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts?: readonly (number | undefined)[],
  ): Promise<void> {
    checkCost('redisStore.refund', cost, policies.length)
    if (policies.length === 0) return
    const plans = this.#plansOf(policies)
    const keys = generalKeys(keyTag(this.#prefix, key), plans)
    const outOfUse = () => this.#health.anyDown && this.#isDown(keys[0]!)
    if (await this.#fallback.refund(key, policies, cost, receipts, outOfUse)) return
    const extra = receiptArgs(receipts, plans.length)
    await this.#general({ op: 'refund', time: this.#time(), extra }, keys, plans, cost).catch(
      () => undefined,
    )
  }

  async force(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
  ): Promise<readonly PolicyResult[]> {
    checkCost('redisStore.force', cost, policies.length)
    if (policies.length === 0) return []
    const plans = this.#plansOf(policies)
    const keys = generalKeys(keyTag(this.#prefix, key), plans)
    if (!(this.#health.anyDown && this.#isDown(keys[0]!))) {
      try {
        const costs = costsOf(cost, plans.length)
        const reply = await this.#general({ op: 'force', time: this.#time() }, keys, plans, costs)
        return decodeGeneral(reply, plans, costs, '').results
      } catch {}
    }
    return this.#fallback.force(key, policies, cost)
  }

  /** A refund and then a force in one EVALSHA: a settle is one round trip. */
  async settle(
    key: string,
    policies: readonly Policy[],
    back: Cost,
    more: Cost,
    receipts?: readonly (number | undefined)[],
  ): Promise<readonly PolicyResult[]> {
    checkCost('redisStore.settle', back, policies.length)
    checkCost('redisStore.settle', more, policies.length)
    if (policies.length === 0) return []
    const plans = this.#plansOf(policies)
    const keys = generalKeys(keyTag(this.#prefix, key), plans)
    const outOfUse = () => this.#health.anyDown && this.#isDown(keys[0]!)
    // What the fallback took (or all of it while the key's shard is away) is given back
    // there, and the rest goes as a force would.
    if (await this.#fallback.refund(key, policies, back, receipts, outOfUse)) {
      return this.force(key, policies, more)
    }
    const extra = receiptArgs(receipts, plans.length)
    for (const cost of costsOf(more, plans.length)) extra.push(String(cost))
    try {
      const costs = costsOf(back, plans.length)
      const reply = await this.#general(
        { op: 'settle', time: this.#time(), extra },
        keys,
        plans,
        costs,
      )
      return decodeGeneral(reply, plans, costs, '').results
    } catch {
      // As a refund and a force that fail: the refund is lost, the force is the fallback's.
      return this.#fallback.force(key, policies, more)
    }
  }

  async block(key: string, policies: readonly Policy[], ms: number): Promise<void> {
    checkBlock('redisStore.block', ms)
    if (policies.length === 0) return
    const plans = this.#plansOf(policies)
    await this.#fallback.block(key, policies, ms)
    const keys = generalKeys(keyTag(this.#prefix, key), plans)
    const call: GeneralCall = { op: 'block', time: this.#time(), extra: [String(ms)] }
    try {
      await this.#general(call, keys, plans, 0)
    } catch (error) {
      // A block that did not reach Redis is not in force: its caller must know.
      throw toStoreError(error)
    }
  }

  async release(key: string, policy: Policy, lease: Lease): Promise<void> {
    if (await this.#fallback.release(key, policy, lease)) return
    const redisKey = keyTag(this.#prefix, key) + this.#plan(policy).suffix
    const member = leaseMember(lease)
    if (this.#health.anyDown && this.#isDown(redisKey)) {
      this.#releases.add(redisKey, member)
      this.#scheduleFlush()
      return
    }
    const since = this.#health.episode
    try {
      await this.#runner.call(['ZREM', redisKey, member], redisKey)
    } catch (error) {
      // Kept and sent again once Redis answers (ZREM is idempotent), rather than holding
      // the slot until the lease expires.
      this.#releases.add(redisKey, member)
      this.#scheduleFlush()
      this.#failed(error, redisKey, since, false)
    }
  }

  async get(key: string, policies: readonly Policy[]): Promise<readonly PolicyResult[]> {
    if (policies.length === 0) return []
    const plans = this.#plansOf(policies)
    const keys = generalKeys(keyTag(this.#prefix, key), plans)
    if (!(this.#health.anyDown && this.#isDown(keys[0]!))) {
      try {
        const costs = plans.map(() => 1)
        const reply = await this.#general({ op: 'get', time: this.#time() }, keys, plans, costs)
        return decodeGeneral(reply, plans, costs, '').results
      } catch {}
    }
    return this.#fallback.get(key, policies)
  }

  /**
   * One general call other than a take, in one round trip: a failure is reported to the
   * shard's health and rethrown.
   */
  async #general(
    call: GeneralCall,
    keys: readonly string[],
    plans: readonly PolicyPlan[],
    cost: Cost,
  ): Promise<unknown> {
    const since = this.#health.episode
    try {
      const args = generalArgs(call, keys, plans, costsOf(cost, plans.length))
      return await this.#runner.script(GENERAL, args, keys[0]!, performance.now())
    } catch (error) {
      this.#failed(error, keys[0]!, since, keys.length > 1)
      throw error
    }
  }

  /**
   * Forgets `key` under `policies` (one DEL), or, without policies, under every policy any
   * process ever counted it by: the keys of its tag, found with `SCAN` on the master that
   * serves its slot. No table of policies is kept for it (issue 24 item 5: a limit derived
   * from client input would grow one without bound).
   */
  async reset(key: string, policies?: readonly Policy[]): Promise<void> {
    const plans = policies === undefined ? undefined : this.#plansOf(policies)
    await this.#fallback.reset(key, policies)
    if (plans?.length === 0) return
    const tag = keyTag(this.#prefix, key)
    const since = this.#health.episode
    try {
      if (plans !== undefined) {
        const keys = generalKeys(tag, plans)
        await this.#runner.call(['DEL', ...keys], keys[0])
      } else {
        // Every key of the tag, and none of another tag: the escaped key holds no `}`.
        // Few keys match: large batches, fewer round trips (about 1 ms of Redis each).
        const pattern = `${globEscape(tag)}*`
        await this.#unlinkMatching(pattern, this.#topology.mastersOf(tag), 10_000)
      }
    } catch (error) {
      this.#failed(error, tag, since, plans === undefined || plans.length > 1)
      throw toStoreError(error)
    }
  }

  async resetAll(): Promise<void> {
    await this.#fallback.resetAll()
    this.#releases.clear()
    try {
      // `prefix{`: every key of this store, and none of a store whose prefix extends this one.
      await this.#unlinkMatching(`${globEscape(this.#prefix)}{*`, this.#topology.masters(), 1_000)
    } catch (error) {
      throw toStoreError(error)
    }
  }

  /**
   * Unlinks every key matching `pattern` on `masters`: `SCAN` of `count` keys a call
   * (never `KEYS`, which blocks Redis for the whole keyspace), each bounded by `timeout`.
   */
  async #unlinkMatching(
    pattern: string,
    masters: readonly SendCommand[],
    count: number,
  ): Promise<void> {
    const clustered = this.#topology.masters().length > 1
    await Promise.all(
      masters.map(async (send) => {
        const node = new ScriptRunner(send, this.#runner.timeoutMs, this.#connection)
        let cursor = '0'
        do {
          const reply = (await node.call(
            ['SCAN', cursor, 'MATCH', pattern, 'COUNT', String(count)],
            undefined,
          )) as [string, string[]]
          cursor = String(reply[0])
          const keys = reply[1]
          if (keys.length === 0) continue
          // A Cluster refuses a multi-key command across slots: one UNLINK per slot.
          const batches = clustered ? groupBy(keys, hashSlot) : [keys]
          await Promise.all(batches.map((batch) => node.call(['UNLINK', ...batch], batch[0])))
        } while (cursor !== '0')
      }),
    )
  }

  #plan(policy: Policy): PolicyPlan {
    let plan = this.#plans.get(policy)
    if (plan === undefined) {
      try {
        plan = planPolicy(policy, this.#leaseTtlMs)
      } catch (error) {
        if (!(error instanceof RangeError || error instanceof TypeError)) throw error
        plan = error
      }
      // A policy the store cannot count is refused with the same error on every call,
      // without working it out again.
      this.#plans.set(policy, plan)
    }
    if (plan instanceof Error) throw plan
    return plan
  }

  #plansOf(policies: readonly Policy[]): PolicyPlan[] {
    const plans = policies.map((policy) => this.#plan(policy))
    for (let i = 1; i < plans.length; i++) {
      for (let j = 0; j < i; j++) {
        if (plans[i]!.suffix === plans[j]!.suffix) {
          throw rangeError(
            FACTORY,
            'policies',
            'must differ within one call (one policy twice would be counted twice)',
            policies[i]!.name,
          )
        }
      }
    }
    return plans
  }

  #isDown(redisKey: string): boolean {
    return this.#health.outOfUse(this.#topology.shardOf(redisKey))
  }

  /** A failed call on `redisKey` (and other keys when `multiKey`) that started in episode `since`. */
  #failed(error: unknown, redisKey: string, since: number, multiKey: boolean): void {
    // TRYAGAIN is this call's keys in a slot being migrated, not an outage of the shard.
    if (isKeyLevel(error)) return
    const shard = this.#topology.shardOf(redisKey)
    const failure = toStoreError(error)
    // A multi-key call may also time out while the Cluster client still retries its
    // TRYAGAIN: the shard stays in use unless a probe fails too.
    if (multiKey && failure.code === 'ERR_SLUICE_REDIS_TIMEOUT') {
      this.#health.suspect(shard, redisKey, failure, since)
    } else {
      this.#health.fail(shard, redisKey, failure, since)
    }
  }

  /** The time argument of a call: a test's clock, or '' for Redis's own. */
  #time(): string {
    const clock = this.#testClock
    if (clock === undefined) return ''
    const ms = clock.now()
    return `${ms} ${micros(ms)}`
  }

  /** The scripts' clock at `at` (`performance.now()`), in µs: a test's, or Redis's as estimated. */
  #nowUs(at: number): number {
    return this.#testClock === undefined
      ? this.#redisClock.nowUs(at)
      : micros(this.#testClock.now())
  }

  /**
   * Deletes keys that hold a value of another type (something else wrote under this
   * prefix), so the decision can start them fresh. False when that fails too.
   */
  async #clear(keys: readonly string[]): Promise<boolean> {
    try {
      await this.#runner.call(['DEL', ...keys], keys[0])
      return true
    } catch {
      return false
    }
  }

  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined || this.#releases.size === 0) return
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined
      void this.#flush()
    }, this.#probeMs)
    this.#flushTimer.unref?.()
  }

  /** Sends the releases that wait for Redis, where their shard is in use. */
  async #flush(): Promise<void> {
    await this.#releases.flush(
      (key, member) => this.#runner.call(['ZREM', key, member], key),
      (key) => !(this.#health.anyDown && this.#isDown(key)),
    )
    if (!this.#connection.ended()) this.#scheduleFlush()
  }
}

function policiesOf(plans: readonly PolicyPlan[]): Policy[] {
  return plans.map((plan) => plan.policy)
}

/** `text` matched literally in a `SCAN MATCH` pattern. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&')
}

/** One cost per policy. */
function costsOf(cost: Cost, policies: number): readonly number[] {
  return typeof cost === 'number' ? new Array<number>(policies).fill(cost) : cost
}

function groupBy<T>(items: readonly T[], by: (item: T) => unknown): T[][] {
  const groups = new Map<unknown, T[]>()
  for (const item of items) {
    const group = groups.get(by(item))
    if (group === undefined) groups.set(by(item), [item])
    else group.push(item)
  }
  return [...groups.values()]
}
