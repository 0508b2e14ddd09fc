/**
 * The API for authors of adapters and stores built on `@sluice/http`: the request
 * pipeline (engines that decide and prepare the answer), the accessors an adapter
 * supplies, the event channels a store publishes on, and policy helpers. Users of a
 * framework never need it: they install the adapter.
 *
 * @module
 */

export {
  adaptiveChannel,
  boundedKey,
  bulkheadChannel,
  type Channel,
  claimPolicies,
  compilePolicy,
  compilePolicyList,
  concurrencyPolicy,
  createdInsideRequest,
  defaultName,
  emitWarning,
  forgetWarnings,
  formatDuration,
  isPromiseLike,
  MAX_KEY_LENGTH,
  type MaybePromise,
  makePolicy,
  type RateRecord,
  rateLimitChannel,
  type SlotsRecord,
  type StoredChange,
  type StoredLease,
  type StoredPolicy,
  type StoredRecord,
  type StoredResult,
  StoredState,
  type Strikes,
  storeChannel,
  whenSettled,
} from '@sluice/keyed/store'
export type { RequestAccessors, ResponseAccessors } from './accessors'
export { BulkheadEngine, type BulkheadOptions } from './bulkhead-engine'
export { type Decision, primaryIndex, type RateLimitInfo } from './decision'
export {
  type Action,
  type LimitedBody,
  type Outcome,
  type ProblemType,
  QUOTA_EXCEEDED,
  type Refusal,
  SKIPPED,
  TEMPORARY_REDUCED_CAPACITY,
} from './engine'
export {
  type BulkheadHandles,
  methodDecorator,
  outcomeUnlessGone,
  type RateLimitHandles,
  withBulkheadHandles,
  withRateLimitHandles,
} from './handles'
export {
  createHeaderWriter,
  type HeaderMode,
  type HeaderWriter,
  retryAfterSeconds,
  toSeconds,
} from './headers'
export { PolicySource } from './policy'
export {
  type ProxyCheck,
  ProxyChecks,
  type ProxyTexts,
  type ProxyView,
  WATCHED_REQUESTS,
} from './proxy-checks'
export {
  decision,
  type KeyState,
  RATE_LIMIT_HINTS,
  RateLimitEngine,
  type RateLimitOptions,
  type WaitingOptions,
} from './rate-limit-engine'
export { enabledChecks, type ValidateOption } from './validate'
