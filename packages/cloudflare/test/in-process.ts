import type { Clock } from '@sluice/core'
import { answer } from '../src/durable-object'
import { ObjectState, type ObjectStorage } from '../src/object-state'
import type { DurableObjectNamespaceLike, DurableObjectStubLike } from '../src/store'

/** A Durable Object's key-value storage in memory, with structured clones as values. */
export function memoryStorage(): ObjectStorage & { readonly size: number } {
  const data = new Map<string, unknown>()
  return {
    get size() {
      return data.size
    },
    async get<T>(keys: string[]) {
      const found = new Map<string, T>()
      for (const key of keys) if (data.has(key)) found.set(key, structuredClone(data.get(key)) as T)
      return found
    },
    async put(entries) {
      for (const [key, value] of Object.entries(entries)) data.set(key, structuredClone(value))
    },
    async delete(keys) {
      let deleted = 0
      for (const key of keys) if (data.delete(key)) deleted++
      return deleted
    },
    async list<T>({ prefix }: { prefix: string }) {
      const found = new Map<string, T>()
      for (const [key, value] of data) if (key.startsWith(prefix)) found.set(key, value as T)
      return found
    },
    async deleteAll() {
      data.clear()
    },
  }
}

/**
 * A namespace whose objects live in this process, on `clock`: the object's code without
 * workerd, for exact tests on a `ManualClock`. `fault` makes every call fail or hang.
 */
export function inProcessNamespace(clock: Clock) {
  const objects = new Map<
    string,
    { state: ObjectState; storage: ReturnType<typeof memoryStorage> }
  >()
  let fault: 'fail' | 'hang' | undefined
  /** The objects the fault is on; every object when undefined. */
  let faulty: string | undefined
  let calls = 0
  const namespace: DurableObjectNamespaceLike<string> = {
    idFromName: (name) => name,
    get(id): DurableObjectStubLike {
      return {
        async fetch(url, init) {
          calls++
          const failing = faulty === undefined || faulty === id ? fault : undefined
          if (failing === 'fail')
            throw new Error('Durable Object reset because its code was updated.')
          if (failing === 'hang') return new Promise<never>(() => {})
          let object = objects.get(id)
          if (object === undefined) {
            const storage = memoryStorage()
            object = { state: new ObjectState(storage, clock), storage }
            objects.set(id, object)
          }
          return answer(object.state, new Request(url, init))
        },
      }
    },
  }
  return {
    namespace,
    objects,
    get calls() {
      return calls
    },
    /**
     * Makes every call fail at once, hang, or (undefined) work again: on every object, or
     * on the one named `only` (`<prefix>:<shard>`).
     */
    fault(kind: 'fail' | 'hang' | undefined, only?: string) {
      fault = kind
      faulty = only
    },
    /** Drops every object from memory, as Cloudflare evicts idle ones; storage stays. */
    evict() {
      for (const [id, object] of objects) {
        objects.set(id, { state: new ObjectState(object.storage, clock), storage: object.storage })
      }
    },
  }
}
