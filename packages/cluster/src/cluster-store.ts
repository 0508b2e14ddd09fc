import cluster from 'node:cluster'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Clock, Duration } from '@sluice/core'
import { describe, readOneOf, readOptions } from '@sluice/core/validation'
import { type LeaseOptions, memoryStore, withLeases } from '@sluice/keyed'
import {
  emitWarning,
  REMOTE_STORE_OPTIONS,
  type RemoteStoreOptions,
  readRemoteStoreOptions,
} from '@sluice/keyed/store'
import { clientStore } from './client'
import type { ClusterStore, ClusterStoreError } from './errors'
import { Host } from './host'
import { ipcLink, serveSocket, serveWorkers, socketLink } from './links'

/**
 * Options of {@link clusterStore}: where the state lives and how workers reach it, the
 * host's memory store, and the options every remote store takes (`timeout`, `onError`,
 * `local`, `probeInterval`, `onFailure`, `onRecovery`), read by the same rules as
 * `redisStore`'s. `leaseTtl` is accepted for those rules but unused: a worker's slots are
 * freed when it ends, not after a time.
 */
export interface ClusterStoreOptions extends RemoteStoreOptions<ClusterStoreError> {
  /**
   * Tells this store's messages from other stores' in the same processes: stores of
   * different names share nothing. Default `'sluice'`.
   */
  name?: string
  /**
   * How workers reach the host: `'ipc'`, the `node:cluster` channel to the primary, or
   * `'socket'`, a Unix socket (a named pipe on Windows) that one of the processes serves.
   * Default: `'socket'` under PM2 (its primary is PM2's daemon, not your code), else `'ipc'`.
   */
  transport?: 'ipc' | 'socket'
  /**
   * With `transport: 'socket'`: whether this process holds the state and serves the
   * socket. Default: under PM2, instance 0 (`NODE_APP_INSTANCE === '0'`); otherwise false.
   * With `'ipc'` the host is the `node:cluster` primary.
   */
  host?: boolean
  /**
   * With `transport: 'socket'`: the socket's path. Default `sluice-<app>-<name>.sock` in
   * the OS temp directory (`\\.\pipe\sluice-<app>-<name>` on Windows), `<app>` the PM2 app's
   * name (`process.env.name`) or `app`.
   */
  path?: string
  /** The host's memory store: most keys per policy (see `memoryStore`). Default 100,000. */
  maxKeys?: number
  /** The host's memory store: most states over all policies. Default 8 × `maxKeys`. */
  maxStates?: number
  /** The host's time source (pass a `ManualClock` in tests). Default `systemClock`. */
  clock?: Clock
  /** Longest wait for the host's answer before the call counts as failed. Default `'1s'`. */
  timeout?: Duration
  /**
   * Quota leases (`withLeases` of `@sluice/keyed`) in the workers: each takes a block of
   * permits (`share` of the capacity, default 0.001) in one call to the host and decides
   * locally until it is spent or `ttl` (default `'1s'`) ends. Admits at most N × block
   * beyond the limit with N workers (0 for a fixed window; a leaky bucket is not leased),
   * whatever the refunds: see the README. The host decides its own calls exactly.
   * Default: off, every decision one call to the host.
   */
  lease?: LeaseOptions
}

const FACTORY = 'clusterStore'
const OPTIONS = [
  'name',
  'transport',
  'host',
  'path',
  'maxKeys',
  'maxStates',
  'clock',
  'lease',
  ...REMOTE_STORE_OPTIONS,
]

/** Stores hosted in this process, by name: two would both answer every request. */
const hosted = new Set<string>()

/**
 * A `Store` for `node:cluster` and PM2 cluster mode: one budget per policy and
 * client key for every worker, no Redis. One process (the host) holds the state in a
 * memory store and decides every request, one at a time, so decisions are exact; the
 * others (workers) ask it, one message per call. A worker that exits or disconnects frees
 * the bulkhead slots it held. A host that does not answer within `timeout`, or whose
 * channel is gone (the primary died), makes a worker follow `onError` (default `'local'`:
 * it limits alone) until the host answers again.
 *
 * The same call works in every process: with `node:cluster` call it in the primary too,
 * before forking (the primary then serves the workers); under PM2 instance 0 hosts on a
 * local socket, which the other instances reach.
 *
 * @example
 * ```ts
 * import cluster from 'node:cluster'
 * import { clusterStore } from '@sluice/cluster'
 * import { rateLimit } from '@sluice/express'
 *
 * const store = clusterStore() // in the primary: hosts; in a worker: asks the primary
 * if (cluster.isPrimary) {
 *   for (let i = 0; i < 4; i++) cluster.fork()
 * } else {
 *   app.use(rateLimit({ limit: 100, window: '1m', store }))
 * }
 * ```
 */
export function clusterStore(options: ClusterStoreOptions = {}): ClusterStore {
  readOptions(FACTORY, options, OPTIONS)
  const name = readName(options.name)
  const pm2 = process.env.pm_id !== undefined
  const transport = readOneOf<'ipc' | 'socket'>(
    FACTORY,
    'transport',
    options.transport,
    ['ipc', 'socket'],
    pm2 ? 'socket' : 'ipc',
  )
  if (transport === 'ipc' && (options.host !== undefined || options.path !== undefined)) {
    throw new TypeError(
      `${FACTORY}: "host" and "path" are only used with transport 'socket' (with 'ipc' the node:cluster primary hosts), got transport 'ipc'`,
    )
  }
  if (options.host !== undefined && typeof options.host !== 'boolean') {
    throw new TypeError(`${FACTORY}: "host" must be a boolean, got ${describe(options.host)}`)
  }
  if (options.path !== undefined && (typeof options.path !== 'string' || options.path === '')) {
    throw new TypeError(
      `${FACTORY}: "path" must be a non-empty string, got ${describe(options.path)}`,
    )
  }
  const settings = readRemoteStoreOptions(FACTORY, options, { timeout: '1s' })
  const isHost =
    transport === 'ipc'
      ? cluster.isPrimary
      : (options.host ?? process.env.NODE_APP_INSTANCE === '0')
  const path = options.path ?? socketPath(name)

  if (!isHost) {
    const connect = transport === 'ipc' ? ipcLink(name) : socketLink(path, name)
    const client = clientStore(FACTORY, connect, settings)
    return options.lease === undefined ? client : leased(client, options.lease)
  }

  if (hosted.has(name)) {
    throw new TypeError(
      `${FACTORY}: a store named ${describe(name)} is already hosted in this process; give each store its own "name"`,
    )
  }
  hosted.add(name)
  const memoryOptions = {
    ...(options.maxKeys === undefined ? {} : { maxKeys: options.maxKeys }),
    ...(options.maxStates === undefined ? {} : { maxStates: options.maxStates }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  }
  const host = new Host(memoryStore(memoryOptions))
  // Read in the host too, so that bad lease options fail in every process alike.
  if (options.lease !== undefined) withLeases(host.memory, options.lease, FACTORY)
  let stop: (() => void) | undefined
  let closed = false
  if (transport === 'ipc') stop = serveWorkers(host, name)
  else {
    serveSocket(host, name, path).then(
      (stopSocket) => {
        if (closed) stopSocket()
        else stop = stopSocket
      },
      (error: Error) =>
        emitWarning(
          FACTORY,
          'ERR_SLUICE_CLUSTER_LISTEN',
          `could not serve the socket ${path}: ${error.message}; the other processes follow onError`,
          true,
        ),
    )
  }
  const memory = host.memory
  return {
    role: 'host',
    carries: true,
    status: 'up',
    async close() {
      if (closed) return
      closed = true
      hosted.delete(name)
      stop?.()
    },
    take: async (key, policies, cost) => memory.take(key, policies, cost),
    refund: async (key, policies, cost, receipts) => memory.refund(key, policies, cost, receipts),
    force: async (key, policies, cost) => memory.force(key, policies, cost),
    block: async (key, policies, ms) => memory.block(key, policies, ms),
    release: async (key, policy, lease) => memory.release(key, policy, lease),
    get: async (key, policies) => memory.get(key, policies),
    reset: async (key, policies) => memory.reset(key, policies),
    resetAll: async () => memory.resetAll(),
  }
}

/** A worker's store with quota leases: its calls go through `withLeases`; `close` gives unspent permits back first. */
function leased(client: ClusterStore, lease: LeaseOptions): ClusterStore {
  const store = withLeases(client, lease, FACTORY)
  return {
    role: 'worker',
    carries: true,
    get status() {
      return client.status
    },
    async close() {
      // A flush that fails (the host is away) leaves the permits where they are: counted.
      await store.flush().catch(() => {})
      await client.close()
    },
    take: async (key, policies, cost, into) => store.take(key, policies, cost, into),
    refund: async (key, policies, cost, receipts) => store.refund(key, policies, cost, receipts),
    force: async (key, policies, cost) => store.force(key, policies, cost),
    block: async (key, policies, ms) => store.block(key, policies, ms),
    release: async (key, policy, lease) => store.release(key, policy, lease),
    get: async (key, policies) => store.get(key, policies),
    reset: async (key, policies) => store.reset(key, policies),
    resetAll: async () => store.resetAll(),
  }
}

function readName(value: unknown): string {
  if (value === undefined) return 'sluice'
  if (typeof value !== 'string' || !/^[\w.-]{1,64}$/.test(value)) {
    throw new TypeError(
      `${FACTORY}: "name" must be 1 to 64 letters, digits, '_', '.' or '-', got ${describe(value)}`,
    )
  }
  return value
}

function socketPath(name: string): string {
  const app = (process.env.name ?? 'app').replace(/[^\w.-]/g, '_')
  if (process.platform === 'win32') return `\\\\.\\pipe\\sluice-${app}-${name}`
  return join(tmpdir(), `sluice-${app}-${name}.sock`)
}
