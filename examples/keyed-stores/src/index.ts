/**
 * The stores every keyed-limiter example is tested on, so each example runs the same test
 * on each: `memoryStore()` (answers synchronously), the memory store answering with
 * promises (as every remote store does, so an example that forgets an `await` fails), and
 * `redisStore()` on the redis-server the test run started (skipped loudly when there is no
 * redis-server binary; a failure under CI).
 */
import { ManualClock } from '@sluice/core'
import { memoryStore, type Store } from '@sluice/keyed'
import { redisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { inject, onTestFinished } from 'vitest'

/** A fresh store of one kind, for one test. */
export interface OpenStore {
  readonly store: Store
  /**
   * The clock the store decides by, for tests that move time; `undefined` on a store that
   * decides by its own server's time (none of the kinds here: Redis gets the test's clock).
   */
  readonly clock: ManualClock | undefined
  /**
   * A number that depends on elapsed time (a wait, a token bucket's remaining): `ms`
   * itself on a ManualClock; on a store whose time moves on while a test runs, any number.
   * Decisions (admitted or refused) are exact on every store.
   */
  timed(ms: number): unknown
}

/** One kind of store. */
export interface StoreKind {
  readonly name: string
  /** Whether tests can move its time (true of every kind here). */
  readonly movesTime: boolean
  /** A new, empty store, closed when the test ends. */
  open(): OpenStore
}

/**
 * The kinds of store to run an example's tests on: memory, memory answering with promises,
 * and Redis when the run's global setup started a redis-server.
 *
 * @example
 * ```ts
 * describe.each(storeKinds())('on the $name store', (kind) => {
 *   it('admits 5 a minute', async () => {
 *     const { store } = kind.open()
 *     const limiter = keyedLimiter({ limit: 5, window: '1m', store })
 *     expect((await limiter.consume('k')).remaining).toBe(4)
 *   })
 * })
 * ```
 */
export function storeKinds(): StoreKind[] {
  const kinds: StoreKind[] = [
    {
      name: 'memory',
      movesTime: true,
      open: () => {
        const clock = new ManualClock()
        return { store: memoryStore({ clock }), clock, timed: (ms) => ms }
      },
    },
    {
      name: 'memory, answering with promises',
      movesTime: true,
      open: () => {
        const clock = new ManualClock()
        return { store: answeringWithPromises(memoryStore({ clock })), clock, timed: (ms) => ms }
      },
    },
  ]
  const port = inject('redisPort')
  if (port !== null) {
    kinds.push({ name: 'redis', movesTime: true, open: () => openRedis(port) })
  }
  return kinds
}

let opened = 0

function openRedis(port: number): OpenStore {
  const client = new Redis(port, '127.0.0.1')
  onTestFinished(async () => {
    await client.quit()
  })
  // A prefix of its own: tests never see each other's keys, nor an earlier run's.
  const prefix = `examples:${process.pid}:${Date.now()}:${++opened}:`
  // The scripts decide on the test's clock (sent with every call) rather than Redis's
  // TIME, which runs on while a test polls: so the numbers are exact, as on memory, and
  // tests can move time. Redis's own clock is tested in @sluice/redis.
  const clock = new ManualClock()
  return {
    store: redisStore({ client, prefix, clock }),
    clock,
    timed: (ms) => ms,
  }
}

/**
 * `store` behind promises: every call answers a turn of the event loop later, as a store
 * across a network does.
 *
 * @example
 * ```ts
 * const limiter = keyedLimiter({ limit: 1, store: answeringWithPromises(memoryStore()) })
 * await limiter.consume('a') // a promise, as on Redis
 * ```
 */
export function answeringWithPromises(store: Store): Store {
  return {
    take: async (key, policies, cost) => store.take(key, policies, cost),
    refund: async (key, policies, cost, receipts) => store.refund(key, policies, cost, receipts),
    force: async (key, policies, cost) => store.force(key, policies, cost),
    block: async (key, policies, ms) => store.block(key, policies, ms),
    release: async (key, policy, lease) => store.release(key, policy, lease),
    get: async (key, policies) => store.get(key, policies),
    reset: async (key, policies) => store.reset(key, policies),
    resetAll: async () => store.resetAll(),
  }
}
