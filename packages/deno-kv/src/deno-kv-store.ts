import type { Clock, Duration } from '@sluice/core'
import { describe, readClock, readInteger, readOptions, typeError } from '@sluice/core/validation'
import type { AsyncStore, Policy } from '@sluice/keyed'
import {
  checkBlock,
  checkCost,
  readLeaseTtl,
  recordPolicy,
  type StoredRecord,
  StoredState,
  withPolicies,
} from '@sluice/keyed/store'

/** A Deno KV key: an array of parts. */
export type KvKey = readonly (string | number | bigint | boolean | symbol | Uint8Array)[]

/** An entry as `Deno.Kv.getMany` returns it. */
interface KvEntry<T> {
  readonly key: KvKey
  readonly value: T | null
  readonly versionstamp: string | null
}

/** The part of `Deno.AtomicOperation` the store uses. */
export interface KvAtomicLike {
  check(...checks: { key: KvKey; versionstamp: string | null }[]): KvAtomicLike
  set(key: KvKey, value: unknown, options?: { expireIn?: number }): KvAtomicLike
  delete(key: KvKey): KvAtomicLike
  commit(): Promise<{ readonly ok: boolean }>
}

/**
 * The part of `Deno.Kv` (`await Deno.openKv()`) the store uses. Typed loosely so that
 * Deno's types are not needed; a real `Deno.Kv` fits.
 */
export interface KvLike {
  getMany(keys: KvKey[]): Promise<KvEntry<unknown>[]>
  atomic(): KvAtomicLike
  list(selector: { prefix: KvKey }): AsyncIterable<{ readonly key: KvKey }>
}

/** Options of {@link denoKvStore}. */
export interface DenoKvStoreOptions {
  /** The database: `await Deno.openKv()` (a local file, or Deno Deploy's KV). */
  kv: KvLike
  /**
   * The first parts of every key the store writes: stores with different prefixes share
   * nothing, and `resetAll` deletes every key under it. One part at least, each a string,
   * number, bigint, boolean or Uint8Array, together at most 512 bytes of a KV key.
   * Default `['sluice']`.
   */
  prefix?: KvKey
  /**
   * How long a concurrency slot is held at most: a process that dies while holding one
   * frees it after this long. Make it longer than your slowest request. Default `'1m'`.
   */
  leaseTtl?: Duration
  /** How many times a decision is retried when another one changed the key meanwhile. Default 16. */
  attempts?: number
  /** Time source. Default: `Date.now()`, which every process and region shares. */
  clock?: Clock
}

/** A store on Deno KV: every method answers with a promise. */
export type DenoKvStore = AsyncStore

/** Every other decision on the key changed it before this one could commit, `attempts` times. */
export class DenoKvStoreError extends Error {
  override readonly name = 'DenoKvStoreError'
  readonly code = 'ERR_SLUICE_KV_CONTENDED'
}

const FACTORY = 'denoKvStore'

/** Wall-clock time: every process and region reading one database agrees on it. */
const wallClock: Clock = {
  now: () => Date.now(),
  sleep: () => Promise.reject(new Error('sluice: a stored limiter never waits')),
}

/** What an attempt returns when another decision changed the key between read and commit. */
const OVERTAKEN = Symbol('overtaken')

/**
 * A local KV file (SQLite) answers "database is locked" while another connection (another
 * process, or `deno serve --parallel`'s workers) writes it.
 */
function isLocked(error: unknown): boolean {
  return error instanceof Error && /database is locked/.test(error.message)
}

/** Waits a few milliseconds, more after each failed attempt, jittered so racers spread out. */
function backOff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(2 ** attempt, 50)
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Deno KV refuses an atomic operation with more mutations than this; resets go in batches. */
const BATCH = 500

/**
 * A {@link Store} on Deno KV: one budget per policy and client key for every process that
 * opens the same database (and every Deno Deploy region, on Deploy's KV). A decision reads
 * the key's state under each policy, decides as `memoryStore()` does (the same
 * `@sluice/core` limiters, penalties and leases), and commits the change in one atomic
 * operation that checks nothing changed since the read; if something did, it decides
 * again on the new state. So every policy of a request takes its permits, or none does,
 * exactly once.
 *
 * KV's `expireIn` only says a key may be deleted *after* that time, not when: each record
 * carries its own times (the limiter's state, the block's end, each lease's expiry), so a
 * record read past its expiry still decides right (it is fresh), and `expireIn` only lets
 * KV collect it.
 *
 * @example
 * ```ts
 * import { denoKvStore } from '@sluice/deno-kv'
 * import { rateLimit } from '@sluice/hono'
 *
 * const store = denoKvStore({ kv: await Deno.openKv() })
 * app.use(rateLimit({ limit: 100, window: '1m', store }))
 * ```
 */
export function denoKvStore(options: DenoKvStoreOptions): DenoKvStore {
  readOptions(FACTORY, options, ['kv', 'prefix', 'leaseTtl', 'attempts', 'clock'])
  const { kv } = options
  if (
    typeof kv !== 'object' ||
    kv === null ||
    typeof kv.getMany !== 'function' ||
    typeof kv.atomic !== 'function'
  ) {
    throw new TypeError(
      `${FACTORY}: "kv" must be a Deno KV database (await Deno.openKv()), got ${describe(kv)}`,
    )
  }
  const prefix = readPrefix(options.prefix)
  const leaseTtlMs = readLeaseTtl(FACTORY, options.leaseTtl)
  const attempts =
    options.attempts === undefined
      ? 16
      : readInteger(FACTORY, 'attempts', options.attempts, 1, 'a positive integer')
  const clock = options.clock === undefined ? wallClock : readClock(FACTORY, 'clock', options.clock)

  const keyOf = (key: string, policy: string): KvKey => [...prefix, key, policy]

  /**
   * Reads the key's records, decides with `decide`, and commits the changes if nothing
   * changed since the read; otherwise decides again. Returns what `decide` returned.
   */
  async function transact<T>(
    key: string,
    policies: readonly Policy[],
    decide: (state: StoredState) => T,
  ): Promise<T> {
    const keys = policies.map((policy) => keyOf(key, recordPolicy(policy)))
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await backOff(attempt)
      try {
        const answer = await attemptOnce(keys, policies, decide)
        if (answer !== OVERTAKEN) return answer
      } catch (error) {
        // A local KV file that another connection is writing: nothing was committed.
        if (!isLocked(error)) throw error
      }
    }
    throw new DenoKvStoreError(
      `${FACTORY}: ${attempts} decisions in a row on "${key}" were overtaken by others; raise "attempts"`,
    )
  }

  /** One read, decision and commit; OVERTAKEN when the key changed since the read. */
  async function attemptOnce<T>(
    keys: KvKey[],
    policies: readonly Policy[],
    decide: (state: StoredState) => T,
  ): Promise<T | typeof OVERTAKEN> {
    const entries = await kv.getMany(keys)
    const state = new StoredState(
      policies,
      entries.map((entry) => (entry.value ?? undefined) as StoredRecord | undefined),
      clock.now(),
    )
    const answer = decide(state)
    const changes = state.changes()
    // Nothing to write: the decision stands on the snapshot getMany read.
    if (changes.length === 0) return answer
    let operation = kv.atomic().check(...entries)
    for (const { index, record, freshInMs } of changes) {
      operation =
        record === undefined
          ? operation.delete(keys[index]!)
          : operation.set(
              keys[index]!,
              record,
              freshInMs === undefined ? undefined : { expireIn: Math.max(1, Math.ceil(freshInMs)) },
            )
    }
    return (await operation.commit()).ok ? answer : OVERTAKEN
  }

  async function deleteAll(selector: KvKey): Promise<void> {
    let batch: KvKey[] = []
    const flush = async () => {
      let operation = kv.atomic()
      for (const key of batch) operation = operation.delete(key)
      await operation.commit()
      batch = []
    }
    for await (const entry of kv.list({ prefix: selector })) {
      batch.push(entry.key)
      if (batch.length === BATCH) await flush()
    }
    if (batch.length > 0) await flush()
  }

  return {
    carries: true,
    async take(key, policies, cost) {
      checkCost(`${FACTORY}.take`, cost, policies.length)
      if (policies.length === 0) return { allowed: true, results: [] }
      // Named once for every attempt: an attempt whose commit went through unanswered
      // (the database locked on the way back) is found by it, and counts once.
      const lease = policies.some((policy) => policy.spec.algorithm === 'concurrency')
        ? crypto.randomUUID()
        : undefined
      const taken = await transact(key, policies, (state) => state.take(cost, leaseTtlMs, lease))
      return { allowed: taken.allowed, results: withPolicies(taken.results, policies) }
    },

    async refund(key, policies, cost, receipts) {
      checkCost(`${FACTORY}.refund`, cost, policies.length)
      if (policies.length === 0) return
      await transact(key, policies, (state) => state.refund(cost, receipts))
    },

    async force(key, policies, cost) {
      checkCost(`${FACTORY}.force`, cost, policies.length)
      if (policies.length === 0) return []
      return withPolicies(await transact(key, policies, (state) => state.force(cost)), policies)
    },

    async block(key, policies, ms) {
      checkBlock(`${FACTORY}.block`, ms)
      if (policies.length === 0) return
      await transact(key, policies, (state) => state.block(ms))
    },

    async release(key, policy, lease) {
      await transact(key, [policy], (state) => state.release(0, lease.id))
    },

    async get(key, policies) {
      if (policies.length === 0) return []
      // A warm-up key's age starts at first sight, a read included: its record is kept.
      return withPolicies(await transact(key, policies, (state) => state.get()), policies)
    },

    async reset(key, policies) {
      if (policies === undefined) {
        await deleteAll([...prefix, key])
        return
      }
      let operation = kv.atomic()
      for (const policy of policies) operation = operation.delete(keyOf(key, recordPolicy(policy)))
      await operation.commit()
    },

    resetAll: () => deleteAll(prefix),
  }
}

/**
 * Deno KV keys hold at most 2048 bytes, encoded (a string part is its UTF-8 and two bytes
 * more); the store's keys are the prefix, the client key and the policy id. A client key
 * kept verbatim has at most 256 UTF-16 code units (longer ones are kept as a digest), up
 * to 770 bytes; a policy id (a name of at most 128 ASCII characters and the spec's
 * numbers) about 300: 512 bytes leave both room.
 */
const MAX_PREFIX_BYTES = 512

const utf8 = new TextEncoder()

/** The bytes a key part takes in a KV key, or undefined for a value KV refuses as a part. */
function partBytes(part: unknown): number | undefined {
  // Strings and bytes are framed by a type byte and a 0 byte; their own 0 bytes are escaped.
  if (typeof part === 'string') {
    return utf8.encode(part).length + part.split('\u0000').length + 1
  }
  if (part instanceof Uint8Array) return part.length + part.filter((byte) => byte === 0).length + 2
  if (typeof part === 'number') return 9
  if (typeof part === 'boolean') return 1
  if (typeof part === 'bigint') {
    const magnitude = part < 0n ? -part : part
    return Math.ceil(magnitude.toString(16).length / 2) + 2
  }
  // The type lists symbol parts too, but Deno refuses them ("expected string, number, ...").
  return undefined
}

/** The prefix option: a KV key Deno KV can extend with a client key and a policy id. */
function readPrefix(value: unknown): KvKey {
  if (value === undefined) return ['sluice']
  if (!Array.isArray(value)) {
    throw typeError(FACTORY, 'prefix', 'must be an array (a KV key)', value)
  }
  if (value.length === 0) {
    throw new RangeError(
      `${FACTORY}: "prefix" must have at least one part (resetAll deletes every key under it, and under [] that is the whole database), got []`,
    )
  }
  let bytes = 0
  for (let i = 0; i < value.length; i++) {
    const size = partBytes(value[i])
    if (size === undefined) {
      throw typeError(
        FACTORY,
        `prefix[${i}]`,
        'must be a string, number, bigint, boolean or Uint8Array (a Deno KV key part)',
        value[i],
      )
    }
    bytes += size
  }
  if (bytes > MAX_PREFIX_BYTES) {
    throw new RangeError(
      `${FACTORY}: "prefix" must take at most ${MAX_PREFIX_BYTES} bytes of a KV key (KV keys hold 2048; the client key and the policy id need the rest), got ${bytes} bytes`,
    )
  }
  return [...value]
}
