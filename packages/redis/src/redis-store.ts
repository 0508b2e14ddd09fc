import { randomUUID } from 'node:crypto'
import type { Clock } from '@sluice/core'
import { micros } from '@sluice/core/internal'
import { rangeError } from '@sluice/core/validation'
import {
  type AsyncStore,
  type Cost,
  type Lease,
  memoryStore,
  type Policy,
  type PolicyResult,
  type Store,
  type TakeBuffer,
  type TakeResult,
  withLeases,
} from '@sluice/keyed'
import { checkBlock, checkCost, costAt, emitWarning, storeChannel } from '@sluice/keyed/store'
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
  singleArgs,
} from './codec'
import { type Connection, connectionOf } from './connection'
import { isKeyLevel, isWrongType, type RedisStoreError, toStoreError } from './errors'
import { Health } from './health'
import { keyTag } from './keys'
import {
  FACTORY,
  type OnError,
  type RedisStoreOptions,
  readStoreSettings,
  type StoreSettings,
} from './options'
import { PendingReleases } from './pending-releases'
import { RedisClock } from './redis-clock'
import { ScriptRunner } from './script-runner'
import { GENERAL } from './scripts'

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

// Lease ids that never reach Redis: taken from the local fallback, or admitted uncounted.
const LOCAL = 'local:'
const UNCOUNTED = 'uncounted:'
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
  readonly #prefix: string
  readonly #onError: OnError
  readonly #local: Store | undefined
  readonly #probeMs: number
  readonly #leaseTtlMs: number
  readonly #settings: StoreSettings
  readonly #runner: ScriptRunner
  readonly #topology: Topology
  readonly #connection: Connection
  readonly #health: Health
  /** A test's clock (the `clock` option), sent with every call; else Redis's own. */
  readonly #testClock: Clock | undefined
  readonly #redisClock = new RedisClock()
  readonly #releases = new PendingReleases()
  readonly #plans = new WeakMap<Policy, PolicyPlan | RangeError | TypeError>()
  /** Every policy this store has seen, by id: what `reset(key)` without policies forgets. */
  readonly #seen = new Map<string, PolicyPlan>()
  readonly #localLeases = new Map<string, Lease>()
  #flushTimer: ReturnType<typeof setTimeout> | undefined

  constructor(settings: StoreSettings) {
    this.#settings = settings
    this.#prefix = settings.prefix
    this.#onError = settings.onError
    this.#local = settings.onError === 'local' ? (settings.local ?? memoryStore()) : undefined
    this.#probeMs = settings.probeMs
    this.#leaseTtlMs = settings.leaseTtlMs
    this.#testClock = settings.clock
    this.#connection = connectionOf(settings.client)
    this.#runner = new ScriptRunner(settings.send, settings.timeoutMs, this.#connection)
    this.#topology = topologyOf(settings.client, settings.send)
    this.#health = new Health(
      {
        probe: (key) =>
          this.#runner.call(['EXISTS', key], key).catch((error: unknown) => {
            this.#topology.refresh()
            throw error
          }),
        live: () => !this.#connection.ended(),
        down: (error) => this.#reportFailure(error),
        up: () => this.#reportRecovery(),
        recovered: () => void this.#flush(),
      },
      settings.probeMs,
    )
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
      return this.#fallbackTake(key, [plan.policy], cost)
    }
    const since = this.#health.episode
    let result: PolicyResult
    try {
      const args = singleArgs(plan, redisKey, this.#time(), cost)
      const reply = await this.#runner.script(
        plan.single!.script,
        args,
        redisKey,
        performance.now(),
      )
      result = decodeSingle(reply, plan)
    } catch (error) {
      if (!retried && isWrongType(error) && (await this.#clear([redisKey]))) {
        return this.#takeOne(key, plan, cost, true)
      }
      this.#failed(error, redisKey, since, false)
      return this.#fallbackTake(key, [plan.policy], cost)
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
      return this.#fallbackTake(key, policiesOf(plans), cost)
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
      return this.#fallbackTake(key, policiesOf(plans), cost)
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
    // Receipts of takes the local store answered are negative (see #fallbackTake).
    if (receipts?.some((receipt) => receipt !== undefined && receipt < 0)) {
      await this.#local?.refund(key, policies, cost, receipts.map(fromLocalReceipt))
      return
    }
    const keys = generalKeys(keyTag(this.#prefix, key), plans)
    if (this.#health.anyDown && this.#isDown(keys[0]!)) {
      // Permits taken in Redis cannot be given back while it is away. Without receipts they
      // were most likely taken where the store answers now.
      if (receipts === undefined) await this.#local?.refund(key, policies, cost)
      return
    }
    const extra = plans.map((_, i) => {
      const receipt = receipts?.[i]
      return receipt === undefined ? '' : String(receipt)
    })
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
    if (this.#local !== undefined) return this.#local.force(key, policies, cost)
    return policies.map((policy) => this.#substitute(policy, this.#onError === 'allow', 1))
  }

  async block(key: string, policies: readonly Policy[], ms: number): Promise<void> {
    checkBlock('redisStore.block', ms)
    if (policies.length === 0) return
    const plans = this.#plansOf(policies)
    await this.#local?.block(key, policies, ms)
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
    if (lease.id.startsWith(UNCOUNTED)) return
    if (lease.id.startsWith(LOCAL)) {
      const inner = this.#localLeases.get(lease.id)
      if (inner === undefined) return
      this.#localLeases.delete(lease.id)
      await this.#local?.release(key, policy, inner)
      return
    }
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
    if (this.#local !== undefined) return this.#local.get(key, policies)
    return policies.map((policy) => this.#substitute(policy, this.#onError === 'allow', 1))
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

  async reset(key: string, policies?: readonly Policy[]): Promise<void> {
    const plans = policies === undefined ? [...this.#seen.values()] : this.#plansOf(policies)
    await this.#local?.reset(key, policies)
    if (plans.length === 0) return
    const keys = generalKeys(keyTag(this.#prefix, key), plans)
    const since = this.#health.episode
    try {
      await this.#runner.call(['DEL', ...keys], keys[0])
    } catch (error) {
      this.#failed(error, keys[0]!, since, keys.length > 1)
      throw toStoreError(error)
    }
  }

  async resetAll(): Promise<void> {
    await this.#local?.resetAll()
    this.#localLeases.clear()
    this.#releases.clear()
    // `prefix{`: every key of this store, and none of a store whose prefix extends this one.
    const pattern = `${this.#prefix.replace(/[*?[\]\\]/g, '\\$&')}{*`
    const masters = this.#topology.masters()
    const clustered = masters.length > 1
    try {
      await Promise.all(
        masters.map(async (send) => {
          const node = new ScriptRunner(send, this.#runner.timeoutMs, this.#connection)
          let cursor = '0'
          do {
            const reply = (await node.call(
              ['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000'],
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
    } catch (error) {
      throw toStoreError(error)
    }
  }

  #plan(policy: Policy): PolicyPlan {
    let plan = this.#plans.get(policy)
    if (plan === undefined) {
      try {
        plan = planPolicy(policy, this.#leaseTtlMs)
        this.#seen.set(policy.id, plan)
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
    return this.#health.isDown(this.#topology.shardOf(redisKey))
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

  async #fallbackTake(key: string, policies: readonly Policy[], cost: Cost): Promise<TakeResult> {
    const local = this.#local
    if (local === undefined) {
      const allowed = this.#onError === 'allow'
      return {
        allowed,
        results: policies.map((policy, i) => this.#substitute(policy, allowed, costAt(cost, i))),
      }
    }
    const taken = await local.take(key, policies, cost)
    return {
      allowed: taken.allowed,
      results: taken.results.map((result) => {
        if (result.lease !== undefined) {
          const id = `${LOCAL}${randomUUID()}`
          this.#localLeases.set(id, result.lease)
          return { ...result, lease: { id, permits: result.lease.permits } }
        }
        // Negative, so a refund can tell a local receipt from a Redis one (never negative).
        if (result.receipt !== undefined) return { ...result, receipt: -1 - result.receipt }
        return result
      }),
    }
  }

  #substitute(policy: Policy, allowed: boolean, cost: number): PolicyResult {
    const probeMs = this.#probeMs
    if (!allowed) {
      return {
        policy,
        allowed,
        limit: policy.limit,
        remaining: 0,
        resetMs: probeMs,
        retryAfterMs: probeMs,
      }
    }
    const result = {
      policy,
      allowed,
      limit: policy.limit,
      remaining: policy.limit,
      resetMs: 0,
      retryAfterMs: 0,
    }
    return policy.spec.algorithm === 'concurrency'
      ? { ...result, lease: { id: `${UNCOUNTED}${randomUUID()}`, permits: cost } }
      : result
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

  #reportFailure(error: RedisStoreError): void {
    const hook = this.#settings.onFailure
    safely(() => {
      if (hook !== undefined) hook(error)
      else
        emitWarning(
          FACTORY,
          'ERR_SLUICE_REDIS_DOWN',
          `${error.message.replace(/^redisStore: /, '')} (${error.code}); answering with onError '${this.#onError}' until it answers again`,
          true,
        )
    })
    if (storeChannel.hasSubscribers) {
      storeChannel.publish({ event: 'failure', store: FACTORY, error })
    }
  }

  #reportRecovery(): void {
    const hook = this.#settings.onRecovery
    safely(() => {
      if (hook !== undefined) hook()
      else
        emitWarning(
          FACTORY,
          'ERR_SLUICE_REDIS_RECOVERED',
          'Redis answers again; decisions are back on Redis',
          true,
        )
    })
    if (storeChannel.hasSubscribers) storeChannel.publish({ event: 'recovery', store: FACTORY })
  }
}

function policiesOf(plans: readonly PolicyPlan[]): Policy[] {
  return plans.map((plan) => plan.policy)
}

function fromLocalReceipt(receipt: number | undefined): number | undefined {
  return receipt === undefined ? undefined : -1 - receipt
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

// A throwing hook must not turn a decision into an error.
function safely(hook: () => void): void {
  try {
    hook()
  } catch {}
}
