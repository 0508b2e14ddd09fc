/**
 * One sluice budget across the workers of a `node:cluster` primary or a PM2 cluster-mode
 * app, without Redis: `clusterStore()` keeps the state in one process and the others ask
 * it over IPC (or a local socket under PM2).
 *
 * @packageDocumentation
 * @module \@sluice/cluster
 */

export type { OnError } from '@sluice/keyed/store'
export { type ClusterStoreOptions, clusterStore } from './cluster-store'
export { type ClusterStore, ClusterStoreError } from './errors'
