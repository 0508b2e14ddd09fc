export type { RequestAccessors, ResponseAccessors } from './accessors'
export { type BulkheadDecision, BulkheadEngine, type BulkheadOptions } from './bulkhead-engine'
export type { Decision, RateLimitInfo } from './decision'
export {
  createHeaderWriter,
  type HeaderMode,
  type HeaderWriter,
  retryAfterSeconds,
  toSeconds,
} from './headers'
export * as keys from './keys'
export { addressKey, FALLBACK_KEY, type IpKeyOptions, type KeyExtractor } from './keys'
export { type MemoryStore, type MemoryStoreOptions, memoryStore } from './memory-store'
export {
  compilePolicies,
  type PoliciesOptions,
  type PolicyOptions,
  type RateAlgorithm,
} from './policy'
export {
  type LimitedBody,
  RateLimitEngine,
  type RateLimitOptions,
  type WaitOptions,
} from './rate-limit-engine'
export type * from './store'
export { emitWarning, enabledChecks, type ValidateOption } from './warnings'
