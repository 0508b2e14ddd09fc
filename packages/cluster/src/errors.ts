import type { AsyncStore } from '@sluice/keyed'

/** A store shared by every worker of a `node:cluster` primary or a PM2 cluster-mode app. */
export interface ClusterStore extends AsyncStore {
  /**
   * `'host'` in the process that holds the state (the `node:cluster` primary, PM2's
   * instance 0), `'worker'` in a process that asks it.
   */
  readonly role: 'host' | 'worker'
  /**
   * `'up'` while decisions are the host's; `'down'` in a worker from a failed call (no
   * answer within `timeout`, the channel closed) until the host answers again.
   */
  readonly status: 'up' | 'down'
  /**
   * Stops serving workers (host), or asking the host (worker: once the calls already made,
   * and a lease's refunds of what it did not spend, are answered); later calls follow
   * `onError`.
   */
  close(): Promise<void>
}

/**
 * Why a worker's call to the host failed: `ERR_SLUICE_CLUSTER_TIMEOUT` (no answer within
 * `timeout`), `ERR_SLUICE_CLUSTER_CLOSED` (the IPC channel or socket to the host is gone:
 * the primary died, or the store was closed) or `ERR_SLUICE_CLUSTER` (the host answered
 * with an error). Handed to `onFailure`, published on the `sluice:store` channel, and
 * thrown by `block`, `reset` and `resetAll`, which have no `onError` answer.
 */
export class ClusterStoreError extends Error {
  override readonly name = 'ClusterStoreError'
  readonly code: 'ERR_SLUICE_CLUSTER_TIMEOUT' | 'ERR_SLUICE_CLUSTER_CLOSED' | 'ERR_SLUICE_CLUSTER'

  constructor(code: ClusterStoreError['code'], message: string, options?: { cause: unknown }) {
    super(`clusterStore: ${message}`, options)
    this.code = code
  }
}
