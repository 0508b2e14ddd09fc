import type { ModuleMetadata } from '@nestjs/common'
import type {
  BulkheadOptions as HttpBulkheadOptions,
  RateLimitOptions as HttpRateLimitOptions,
  ProxyValidateOption,
} from '@sluice/http'
import type { NestRequest, NestResponse } from './nest-http'

/**
 * Options of a rate limit in Nest (`SluiceModule.forRoot()`, `@RateLimit()`): the options
 * every sluice adapter shares, with the platform's request and response in the callbacks
 * (Express's or Fastify's). A refusal is answered through Nest's exception layer (see
 * `RateLimitException`), so there is no `onLimited`.
 */
export interface RateLimitOptions
  extends Omit<HttpRateLimitOptions<NestRequest, NestResponse>, 'onLimited'> {
  /** One-time configuration warnings (see `ProxyValidateOption`). Default: all on. */
  validate?: ProxyValidateOption
}

/** Options of `@Bulkhead()`: the options every sluice adapter shares. */
export interface BulkheadOptions
  extends Omit<HttpBulkheadOptions<NestRequest, NestResponse>, 'onLimited'> {}

/**
 * Options of `SluiceModule.forRoot()`: the rate limit every route the guard protects
 * counts against (one budget per key across those routes), and the store that holds it
 * (default: one memory store of the module's), which `@RateLimit()` overrides share.
 */
export interface SluiceModuleOptions extends RateLimitOptions {}

/**
 * Options of `SluiceModule.forRootAsync()`: a factory for the module's options, with the
 * providers it needs, as `@nestjs/config` users write it.
 *
 * @example
 * ```ts
 * SluiceModule.forRootAsync({
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ limit: config.get('RATE_LIMIT'), window: '1m' }),
 * })
 * ```
 */
export interface SluiceModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  // biome-ignore lint/suspicious/noExplicitAny: Nest injects whatever `inject` lists.
  useFactory: (...args: any[]) => SluiceModuleOptions | Promise<SluiceModuleOptions>
  // biome-ignore lint/suspicious/noExplicitAny: Nest's own type for injection tokens.
  inject?: any[]
}
