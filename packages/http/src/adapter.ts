/**
 * The API for authors of adapters built on `@sluice/http`: the two engines (one init
 * object each), the accessors an adapter supplies, the handles its middleware carries and
 * the decorator helper. The answer itself is `respond`, of `@sluice/http/node` or
 * `@sluice/http/fetch`. Store authors use `@sluice/keyed/store`; users of a framework
 * never need any of it: they install the adapter.
 *
 * @module
 */

/**
 * The options that describe one policy (`limit`, `window`, `algorithm`, ...), the other
 * spelling of `policies`: an adapter merging two option objects treats them as one unit.
 */
export { POLICY_OPTIONS } from '@sluice/keyed/store'
export type {
  ProxyCheckName,
  ProxySetup,
  ProxyTexts,
  ProxyView,
  RequestAccessors,
  ResponseAccessors,
} from './accessors'
export type { AnswerAccessors } from './answer'
export { BulkheadEngine, type BulkheadOptions } from './bulkhead-engine'
export type { BulkheadInfo, Decision, RateLimitInfo } from './decision'
export type { EngineInit, FollowedResponse, LimitedBody, Outcome, Refusal } from './engine'
export {
  type BulkheadHandles,
  methodDecorator,
  type RateLimitHandles,
  withBulkheadHandles,
  withRateLimitHandles,
} from './handles'
export { RateLimitEngine, type RateLimitOptions } from './rate-limit-engine'
export type { ValidateOption } from './validate'
