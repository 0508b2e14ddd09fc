import type { Clock } from '@sluice/core'
import {
  recordPolicy,
  type StoredRecord,
  StoredState,
  toWire,
  type WireTake,
} from '@sluice/keyed/store'
import type { Operation, WirePolicy } from './protocol'

/**
 * The part of a Durable Object's storage the object uses (the key-value API, on the
 * SQLite and the older key-value backends alike). Values are structured clones, so the
 * limiters' `-Infinity` survives.
 */
export interface ObjectStorage {
  get<T = unknown>(keys: string[]): Promise<Map<string, T>>
  put(entries: Record<string, unknown>): Promise<void>
  delete(keys: string[]): Promise<number>
  list<T = unknown>(options: { prefix: string }): Promise<Map<string, T>>
  deleteAll(): Promise<void>
}

/** Most records the object keeps in memory; the rest are read from storage when needed. */
const CACHED_RECORDS = 10_000

/** Separates the client key from the policy id in a record's name; keys never hold NUL. */
const SEPARATOR = '\u0000'

const recordName = (key: string, policy: string) => `${key}${SEPARATOR}${policy}`

/**
 * The state and decisions of one Durable Object of `durableObjectStore`: every client key
 * that hashes to it, under every policy. It decides as `memoryStore` does (`StoredState`:
 * the same `@sluice/core` limiters, penalties and lease rules), on its own clock, and
 * keeps every change in the object's storage, so a budget outlives the object's eviction
 * from memory. Operations run one at a time.
 */
export class ObjectState {
  readonly #storage: ObjectStorage
  readonly #clock: Clock
  /** Records by name, most recently used last; null: known to be absent from storage. */
  readonly #cache = new Map<string, StoredRecord | null>()
  #queue: Promise<unknown> = Promise.resolve()

  constructor(storage: ObjectStorage, clock: Clock) {
    this.#storage = storage
    this.#clock = clock
  }

  /** Runs one operation after the ones before it. */
  run(operation: Operation): Promise<unknown> {
    const next = this.#queue.then(() => this.#execute(operation))
    this.#queue = next.catch(() => {})
    return next
  }

  async #execute(operation: Operation): Promise<WireTake | null> {
    switch (operation.op) {
      case 'take': {
        const { key, policies, cost, leaseTtlMs, lease } = operation
        const state = await this.#state(key, policies)
        const taken = state.take(cost, leaseTtlMs, lease)
        this.#save(key, policies, state)
        return toWire(taken)
      }
      case 'refund': {
        const { key, policies, cost, receipts } = operation
        const state = await this.#state(key, policies)
        state.refund(cost, receipts)
        this.#save(key, policies, state)
        return null
      }
      case 'force': {
        const { key, policies, cost } = operation
        const state = await this.#state(key, policies)
        const results = state.force(cost)
        this.#save(key, policies, state)
        return toWire({ allowed: true, results })
      }
      case 'block': {
        const { key, policies, ms } = operation
        const state = await this.#state(key, policies)
        state.block(ms)
        this.#save(key, policies, state)
        return null
      }
      case 'release': {
        const { key, policies, lease } = operation
        const state = await this.#state(key, policies)
        state.release(0, lease)
        this.#save(key, policies, state)
        return null
      }
      case 'get': {
        const { key, policies } = operation
        const state = await this.#state(key, policies)
        const results = state.get()
        // A warm-up key's age starts at first sight, a read included: its record is kept.
        this.#save(key, policies, state)
        return toWire({ allowed: results.every((r) => r.allowed), results })
      }
      case 'reset':
        await this.#reset(operation.key, operation.policies)
        return null
      case 'resetAll':
        this.#cache.clear()
        await this.#storage.deleteAll()
        return null
    }
  }

  async #state(key: string, policies: readonly WirePolicy[]): Promise<StoredState> {
    const records = await this.#load(
      policies.map((policy) => recordName(key, recordPolicy(policy))),
    )
    return new StoredState(policies, records, this.#clock.now())
  }

  async #reset(key: string, policies: readonly string[] | undefined): Promise<void> {
    let names: string[]
    if (policies === undefined) {
      const prefix = `${key}${SEPARATOR}`
      names = [...(await this.#storage.list({ prefix })).keys()]
      for (const name of this.#cache.keys()) if (name.startsWith(prefix)) names.push(name)
    } else {
      names = policies.map((policy) => recordName(key, policy))
    }
    for (const name of names) this.#cache.set(name, null)
    this.#trim()
    if (names.length > 0) await this.#storage.delete([...new Set(names)])
  }

  /** The records of `names`, in order (undefined where there is none). */
  async #load(names: readonly string[]): Promise<(StoredRecord | undefined)[]> {
    const missing = names.filter((name) => !this.#cache.has(name))
    if (missing.length > 0) {
      const stored = await this.#storage.get<StoredRecord>(missing)
      for (const name of missing) this.#cache.set(name, stored.get(name) ?? null)
    }
    return names.map((name) => {
      const record = this.#cache.get(name) ?? null
      // Touched: the most recently used records stay in memory.
      this.#cache.delete(name)
      this.#cache.set(name, record)
      return record ?? undefined
    })
  }

  #save(key: string, policies: readonly WirePolicy[], state: StoredState): void {
    for (const { index, record } of state.changes()) {
      this.#write(recordName(key, recordPolicy(policies[index]!)), record)
    }
    this.#trim()
  }

  /**
   * Writes a record (or deletes it) in memory and in storage. Not awaited: a Durable
   * Object's output gate holds the answer until storage has confirmed the write, and the
   * next operation reads the cache.
   */
  #write(name: string, record: StoredRecord | undefined): void {
    this.#cache.delete(name)
    this.#cache.set(name, record ?? null)
    void (record === undefined
      ? this.#storage.delete([name])
      : this.#storage.put({ [name]: record }))
  }

  #trim(): void {
    for (const name of this.#cache.keys()) {
      if (this.#cache.size <= CACHED_RECORDS) return
      this.#cache.delete(name)
    }
  }
}
