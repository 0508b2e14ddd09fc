/**
 * Rate limits and bulkheads for NestJS 10 and 11, on the Express and the Fastify platform, for
 * controllers, GraphQL resolvers and WebSocket gateways:
 * `SluiceModule.forRoot()` / `forRootAsync()`, `SluiceGuard` (global, per controller or per
 * handler), and the decorators `@RateLimit()`, `@SkipRateLimit()` and `@Bulkhead()`, with
 * the standard RateLimit headers of every sluice adapter. Re-exports what its users need
 * from `@sluice/http` (`keys`, `memoryStore`, the option and decision types).
 *
 * @packageDocumentation
 * @module \@sluice/nestjs
 */
export type {
  ProxyValidateOption as ValidateOption,
  ProxyWarningCode as ValidationCode,
} from '@sluice/http'
export {
  addressKey,
  type BlockOptions,
  type BulkheadEvent,
  type BulkheadInfo,
  CHANNELS,
  type Decision,
  FALLBACK_KEY,
  type HeaderMode,
  type IpKeyOptions,
  type KeyExtractor,
  type KeyState,
  keys,
  type LimitedBody,
  type MaybePromise,
  type MemoryStore,
  type MemoryStoreOptions,
  memoryStore,
  type Policy,
  type PolicyOptions,
  type RateAlgorithm,
  type RateLimitEvent,
  type RateLimitInfo,
  type Store,
  type StoreEvent,
} from '@sluice/http'
export {
  BULKHEAD_METADATA,
  Bulkhead,
  type ClassOrMethodDecorator,
  RATE_LIMIT_METADATA,
  RateLimit,
  SKIP_RATE_LIMIT_METADATA,
  SkipRateLimit,
} from './decorators'
export {
  type GraphQLRefusal,
  type GraphQLRefusalExtensions,
  RateLimitException,
} from './exception'
export type { NestRequest, NestResponse } from './nest-http'
export type {
  BulkheadOptions,
  RateLimitOptions,
  SluiceModuleAsyncOptions,
  SluiceModuleOptions,
} from './options'
export { SluiceGuard } from './sluice.guard'
export { SluiceModule } from './sluice.module'
export { SLUICE_OPTIONS, SluiceService } from './sluice.service'
