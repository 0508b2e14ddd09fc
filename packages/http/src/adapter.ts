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
  bulkheadChannel,
  type Channel,
  rateLimitChannel,
  storeChannel,
} from './events'
export { isPromiseLike, type MaybePromise } from './maybe-promise'
export {
  claimPolicies,
  compilePolicy,
  compilePolicyList,
  concurrencyPolicy,
  defaultName,
  formatDuration,
  makePolicy,
  PolicySource,
} from './policy'
export { emitWarning, enabledChecks, type ValidateOption } from './warnings'
