import { type DynamicModule, Global, Module, type Provider } from '@nestjs/common'
import { DiscoveryModule } from '@nestjs/core'
import type { SluiceModuleAsyncOptions, SluiceModuleOptions } from './options'
import { SluiceGuard } from './sluice.guard'
import { SLUICE_OPTIONS, SluiceService } from './sluice.service'

const exported = [SLUICE_OPTIONS, SluiceService, SluiceGuard]

/**
 * Registers sluice in a Nest app: the module's rate limit (one budget per key across the
 * routes its guard protects), the store it counts in, and `SluiceGuard`. Global, like
 * `@nestjs/throttler`'s module: import it once, in the root module; bind the guard with
 * `APP_GUARD` or `@UseGuards(SluiceGuard)`.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [SluiceModule.forRoot({ limit: 100, window: '1m' })],
 *   providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
 * })
 * export class AppModule {}
 * ```
 */
@Global()
@Module({})
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module is a class; registration is static.
export class SluiceModule {
  /** The module with fixed options (default: 100 requests a minute per client address). */
  static forRoot(options: SluiceModuleOptions = {}): DynamicModule {
    return {
      module: SluiceModule,
      // Discovery finds the decorated handlers, whose limiters are built at startup.
      imports: [DiscoveryModule],
      providers: [{ provide: SLUICE_OPTIONS, useValue: options }, SluiceService, SluiceGuard],
      exports: exported,
    }
  }

  /**
   * The module with options from a factory (a `ConfigService`, a secret store): `inject`
   * lists what the factory is given, `imports` the modules that provide them.
   *
   * @example
   * ```ts
   * SluiceModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ limit: config.getOrThrow('RATE_LIMIT') }),
   * })
   * ```
   */
  static forRootAsync(options: SluiceModuleAsyncOptions): DynamicModule {
    if (typeof options?.useFactory !== 'function') {
      throw new TypeError(
        `SluiceModule.forRootAsync: "useFactory" must be a function, got ${String(options?.useFactory)}`,
      )
    }
    const provider: Provider = {
      provide: SLUICE_OPTIONS,
      useFactory: options.useFactory,
      inject: options.inject ?? [],
    }
    return {
      module: SluiceModule,
      imports: [DiscoveryModule, ...(options.imports ?? [])],
      providers: [provider, SluiceService, SluiceGuard],
      exports: exported,
    }
  }
}
