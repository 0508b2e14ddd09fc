import { randomUUID } from 'node:crypto'
import { rangeError, typeError } from '@sluice/core/validation'
import {
  type AsyncStore,
  type Lease,
  memoryStore,
  type Policy,
  type PolicyResult,
  type Store,
  type TakeResult,
} from '@sluice/keyed'
import { emitWarning, storeChannel } from '@sluice/keyed/store'
import { hashSlot, type Topology, topologyOf } from './cluster'
import {
  decodeGeneral,
  decodeSingle,
  generalArgs,
  generalKeys,
  leaseMember,
  type PolicyPlan,
  planPolicy,
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
 * an admitted take is one or two Redis calls and an integer reply), a general script for
 * several policies (all or none), warm-up, bulkheads and penalties, all on Redis's own
 * clock. Keys expire once their state is back to fresh.
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
  return new RedisBackedStore(readStoreSettings(options))
}

class RedisBackedStore implements RedisStore {
  readonly #prefix: string
  readonly #onError: OnError
  readonly #local: Store | undefined
  readonly #probeMs: number
  readonly #leaseTtlUs: number
  readonly #settings: StoreSettings
  readonly #runner: ScriptRunner
  readonly #topology: Topology
  readonly #connection: Connection
  readonly #health: Health
  readonly #clock = new RedisClock()
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
    this.#leaseTtlUs = Math.ceil(settings.leaseTtlMs * 1000)
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

  take(key: string, policies: readonly Policy[], cost: number): Promise<TakeResult> {
    // Not async, to spare the one-policy path a promise; a bad argument still rejects.
    try {
      checkCost(cost)
      if (policies.length === 1) {
        const plan = this.#plan(policies[0]!)
        if (plan.single !== undefined) return this.#takeOne(key, plan, cost, false)
        return this.#takeMany(key, [plan], cost, false)
      }
      if (policies.length === 0) return Promise.resolve(EMPTY)
      return this.#takeMany(key, this.#plansOf(policies), cost, false)
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
    const single = plan.single!
    const clock = this.#clock
    const sentAt = performance.now()
    const args = single.args(redisKey, costText(cost), single.alwaysTime || clock.stale(sentAt))
    const since = this.#health.episode
    let reply: unknown
    try {
      reply = await this.#runner.script(single.script, args, redisKey, sentAt)
    } catch (error) {
      if (!retried && isWrongType(error) && (await this.#clear([redisKey]))) {
        return this.#takeOne(key, plan, cost, true)
      }
      this.#failed(error, redisKey, since)
      return this.#fallbackTake(key, [plan.policy], cost)
    }
    // Redis ran the script between the send and now: the send is close enough for the
    // reset time, and errs towards giving back less on a refund by receipt.
    if (typeof reply === 'number') {
      return { allowed: true, results: [single.decode(reply, clock.nowUs(sentAt))] }
    }
    const { result, now } = decodeSingle(reply, plan.policy)
    clock.sample(now, sentAt, performance.now())
    return { allowed: result.allowed, results: [result] }
  }

  async #takeMany(
    key: string,
    plans: readonly PolicyPlan[],
    cost: number,
    retried: boolean,
  ): Promise<TakeResult> {
    const tag = keyTag(this.#prefix, key)
    const keys = generalKeys(tag, plans)
    if (this.#health.anyDown && this.#isDown(keys[0]!)) {
      return this.#fallbackTake(key, policiesOf(plans), cost)
    }
    const leases = plans.filter((plan) => plan.concurrency)
    const leaseId = leases.length === 0 ? '' : randomUUID()
    const timeoutMs = this.#runner.timeoutMs
    const sentAt = performance.now()
    const deadlineUs =
      leases.length !== 0 && !retried
        ? this.#clock.nowUs(sentAt) + (timeoutMs + DEADLINE_SLACK_MS) * 1000
        : 0
    const since = this.#health.episode
    let reply: ReturnType<typeof decodeGeneral>
    try {
      const args = generalArgs('take', keys, plans, cost, leaseId, deadlineUs)
      reply = decodeGeneral(
        await this.#runner.script(GENERAL, args, keys[0]!, sentAt),
        plans,
        cost,
        leaseId,
      )
    } catch (error) {
      // The take may still reach Redis (or have, its answer lost): undo its leases once
      // Redis answers, after its deadline, so that the undo cannot come first.
      for (const plan of leases) {
        const notBefore = sentAt + timeoutMs + 2 * DEADLINE_SLACK_MS
        this.#releases.add(
          tag + plan.suffix,
          leaseMember({ id: leaseId, permits: cost }),
          notBefore,
        )
      }
      this.#scheduleFlush()
      if (!retried && isWrongType(error) && (await this.#clear(keys))) {
        return this.#takeMany(key, plans, cost, true)
      }
      this.#failed(error, keys[0]!, since)
      return this.#fallbackTake(key, policiesOf(plans), cost)
    }
    this.#clock.sample(reply.now, sentAt, performance.now())
    // Past the deadline by Redis's clock, though this caller is still waiting: the
    // estimate of that clock was off (a node whose clock runs ahead). Once more, without.
    if (reply.taken === -1) return this.#takeMany(key, plans, cost, true)
    return { allowed: reply.taken === 1, results: reply.results }
  }

  async refund(
    key: string,
    policies: readonly Policy[],
    cost: number,
    receipts?: readonly (number | undefined)[],
  ): Promise<void> {
    checkCost(cost)
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
    const since = this.#health.episode
    try {
      const args = generalArgs(
        'refund',
        keys,
        plans,
        cost,
        '',
        0,
        receipts ?? plans.map(() => undefined),
      )
      await this.#runner.script(GENERAL, args, keys[0]!, performance.now())
    } catch (error) {
      this.#failed(error, keys[0]!, since)
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
      this.#failed(error, redisKey, since)
    }
  }

  async get(key: string, policies: readonly Policy[]): Promise<readonly PolicyResult[]> {
    if (policies.length === 0) return []
    const plans = this.#plansOf(policies)
    const keys = generalKeys(keyTag(this.#prefix, key), plans)
    if (!(this.#health.anyDown && this.#isDown(keys[0]!))) {
      const since = this.#health.episode
      try {
        const args = generalArgs('get', keys, plans, 1, '', 0)
        const reply = await this.#runner.script(GENERAL, args, keys[0]!, performance.now())
        return decodeGeneral(reply, plans, 1, '').results
      } catch (error) {
        this.#failed(error, keys[0]!, since)
      }
    }
    if (this.#local !== undefined) return this.#local.get(key, policies)
    return policies.map((policy) => this.#substitute(policy, this.#onError === 'allow', 1))
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
      this.#failed(error, keys[0]!, since)
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
        plan = planPolicy(policy, this.#leaseTtlUs)
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

  /** A failed call on `redisKey` that started in episode `since`. */
  #failed(error: unknown, redisKey: string, since: number): void {
    // TRYAGAIN is this call's keys in a slot being migrated, not an outage of the shard.
    if (isKeyLevel(error)) return
    this.#health.fail(this.#topology.shardOf(redisKey), redisKey, toStoreError(error), since)
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

  async #fallbackTake(key: string, policies: readonly Policy[], cost: number): Promise<TakeResult> {
    const local = this.#local
    if (local === undefined) {
      const allowed = this.#onError === 'allow'
      return {
        allowed,
        results: policies.map((policy) => this.#substitute(policy, allowed, cost)),
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

/**
 * Refuses a cost that is not a positive integer (issue 11: `cost: 1e308` used to fail
 * inside Redis on every request). A cost above every limit is a valid question whose
 * answer is "never": it is sent as 2^53 − 1, which no policy can hold.
 */
function checkCost(cost: number): void {
  if (typeof cost !== 'number') throw typeError(FACTORY, 'cost', 'must be a positive integer', cost)
  if (!Number.isInteger(cost) || cost < 1) {
    throw rangeError(FACTORY, 'cost', 'must be a positive integer', cost)
  }
}

function costText(cost: number): string {
  if (cost === 1) return '1'
  return cost > Number.MAX_SAFE_INTEGER ? String(Number.MAX_SAFE_INTEGER) : String(cost)
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
