/**
 * For authors of stores (and of sluice's own packages): the policy helpers, the state a
 * store keeps as data (`StoredState`) and its results over a wire, key bounding, the event
 * channels a store publishes on and its warnings, and what every store whose state lives
 * elsewhere shares: its options (`readRemoteStoreOptions`), its health per shard
 * (`StoreHealth`) and its answers while the backend fails (`Fallback`). Users of the
 * limiters never need it.
 *
 * @module
 */

export { checkBlock, checkCost, costAt, type KeyedCost, readKeyedCost } from './call-checks'
export {
  type AdaptiveLimitEvent,
  adaptiveChannel,
  type BulkheadEvent,
  bulkheadChannel,
  CHANNELS,
  type Channel,
  type RateLimitEvent,
  rateLimitChannel,
  type StoreEvent,
  storeChannel,
} from './events'
export { Fallback, type FallbackOptions } from './fallback'
export { boundedKey, checkKey, lookupKey, MAX_KEY_LENGTH, storedKey } from './key'
export { KeyedCore, livePolicies, totalCost } from './keyed-core'
export { andThen, isPromiseLike, type MaybePromise, whenSettled } from './maybe-promise'
export {
  type BlockOptions,
  checkCarries,
  claimPolicies,
  compilePolicy,
  compilePolicyList,
  concurrencyPolicy,
  DEFAULT_ALGORITHM,
  DEFAULT_LIMIT,
  DEFAULT_WINDOW,
  defaultName,
  formatDuration,
  makePolicy,
  POLICY_OPTIONS,
  type PolicyOptions,
  policyName,
  type RateAlgorithm,
  refuseBesidePolicies,
  withCarry,
} from './policy'
export { longestWait, primaryIndex } from './primary'
export {
  MAX_TIMER_MS,
  type OnError,
  REMOTE_STORE_OPTIONS,
  type RemoteStoreOptions,
  type RemoteStoreSettings,
  readLeaseTtl,
  readRemoteStoreOptions,
} from './remote-options'
export type * from './store'
export { type StoreFailure, StoreHealth, type StoreHealthOptions } from './store-health'
export { fromWire, toWire, type WireResult, type WireTake, withPolicies } from './stored-results'
export {
  type RateRecord,
  recordPolicy,
  type SlotsRecord,
  type StoredChange,
  type StoredLease,
  type StoredPolicy,
  type StoredRecord,
  type StoredResult,
  StoredState,
  type Strikes,
} from './stored-state'
export { countStrike, type StrikeCount } from './strikes'
export {
  createdInsideRequest,
  emitWarning,
  forgetWarnings,
  warnIfBareMilliseconds,
} from './warnings'
