import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common'
import { Reflector } from '@nestjs/core'
import { respond } from '@sluice/http/node'
import type { KeyedResult } from '@sluice/keyed'
import { isPromiseLike, type MaybePromise } from '@sluice/keyed/store'
import { type NestRequest, type NestResponse, nestResponse } from './accessors'
import { BULKHEAD_METADATA, RATE_LIMIT_METADATA, SKIP_RATE_LIMIT_METADATA } from './decorators'
import type { BulkheadOptions, RateLimitOptions } from './options'
import { SluiceService } from './sluice.service'

const admit = () => true

/** What the decorators set for one handler of one class. */
interface HandlerMetadata {
  readonly skip: boolean | readonly string[] | undefined
  readonly own: RateLimitOptions | undefined
  readonly bulkhead: BulkheadOptions | undefined
}

/**
 * Decorator metadata by handler and class: fixed once the app is built, and read on
 * every request otherwise (three reflector lookups over two targets).
 */
const metadataCache = new WeakMap<object, WeakMap<object, HandlerMetadata>>()

/**
 * The guard that enforces `SluiceModule`'s rate limit, and each handler's `@RateLimit()`,
 * `@SkipRateLimit()` and `@Bulkhead()`: globally (`{ provide: APP_GUARD, useClass:
 * SluiceGuard }`), per controller or per handler (`@UseGuards(SluiceGuard)`), on the
 * Express and the Fastify platform alike. It sends the same RateLimit headers as every
 * sluice adapter and refuses with a {@link RateLimitException}.
 *
 * Other contexts go through `getRequest` / `getResponse` (GraphQL: the request and
 * response in the GraphQL context) and `getKey`; a WebSocket message is counted by a keyed
 * limiter under `getKey(context)` (default: the client's address) and refused with a
 * `WsException`.
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
@Injectable()
export class SluiceGuard implements CanActivate {
  constructor(
    @Inject(SluiceService) protected readonly sluice: SluiceService,
    @Inject(Reflector) protected readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const { skip, own, bulkhead } = this.#metadata(context)
    if (context.getType() === 'ws') {
      return skip === true ? true : this.#limitMessage(context, own, skip)
    }
    const req = this.getRequest(context)
    const res = this.getResponse(context)
    const next =
      bulkhead === undefined
        ? admit
        : () =>
            respond(
              this.sluice.bulkheadFor(bulkhead).admit(req, res),
              req,
              res,
              admit,
              nestResponse,
            )
    if (skip === true) return next() as boolean | Promise<boolean>
    const engine = this.sluice.rateLimitFor(own, skip === false ? undefined : skip)
    const key = this.getKey(context)
    const run = (found: string | undefined) => {
      if (found !== undefined) this.sluice.useKey(req, found)
      return respond(engine.admit(req, res), req, res, next, nestResponse)
    }
    return (isPromiseLike(key) ? Promise.resolve(key).then(run) : run(key)) as
      | boolean
      | Promise<boolean>
  }

  /** What the decorators set for this handler, read once per handler and class. */
  #metadata(context: ExecutionContext): HandlerMetadata {
    const handler = context.getHandler()
    const target = context.getClass()
    let byClass = metadataCache.get(handler)
    if (byClass === undefined) {
      byClass = new WeakMap()
      metadataCache.set(handler, byClass)
    }
    let found = byClass.get(target)
    if (found === undefined) {
      const targets = [handler, target]
      found = {
        skip: this.reflector.getAllAndOverride(SKIP_RATE_LIMIT_METADATA, targets),
        own: this.reflector.getAllAndOverride(RATE_LIMIT_METADATA, targets),
        bulkhead: this.reflector.getAllAndOverride(BULKHEAD_METADATA, targets),
      }
      byClass.set(target, found)
    }
    return found
  }

  /**
   * The request to limit. Default: the HTTP request (Express's or Fastify's). Override for
   * GraphQL: `GqlExecutionContext.create(context).getContext().req`.
   */
  protected getRequest(context: ExecutionContext): NestRequest {
    return context.switchToHttp().getRequest<NestRequest>()
  }

  /**
   * The response that takes the headers. Default: the HTTP response. Override for
   * GraphQL: `GqlExecutionContext.create(context).getContext().res` (Apollo on Express)
   * or `.reply` (Mercurius).
   */
  protected getResponse(context: ExecutionContext): NestResponse {
    return context.switchToHttp().getResponse<NestResponse>()
  }

  /**
   * The key a request counts under, or `undefined` for the `key` option (default: the
   * client address). Override to count by user, API key or tenant; for a WebSocket
   * message, the default is the client's address.
   *
   * @example
   * ```ts
   * class UserGuard extends SluiceGuard {
   *   protected override getKey(context: ExecutionContext) {
   *     return context.switchToHttp().getRequest().user?.id
   *   }
   * }
   * ```
   */
  protected getKey(context: ExecutionContext): MaybePromise<string | undefined> {
    if (context.getType() !== 'ws') return undefined
    const client = context.switchToWs().getClient<WsClient>()
    return (
      client?._socket?.remoteAddress ?? client?.handshake?.address ?? client?.conn?.remoteAddress
    )
  }

  /**
   * The exception a refused WebSocket message throws. Default: a `WsException` with
   * `{ status: 'error', message: 'Too Many Requests', retryAfterMs }`, which Nest's
   * gateway filter sends to the client as an `exception` event.
   */
  protected async messageRefused(_context: ExecutionContext, result: KeyedResult): Promise<Error> {
    const { WsException } = await import('@nestjs/websockets')
    return new WsException({
      status: 'error',
      message: 'Too Many Requests',
      retryAfterMs: result.retryAfterMs,
    })
  }

  async #limitMessage(
    context: ExecutionContext,
    own: RateLimitOptions | undefined,
    skip: false | readonly string[] | undefined,
  ): Promise<boolean> {
    const key = (await this.getKey(context)) ?? 'unknown'
    const limiter = this.sluice.messageLimiterFor(own, skip === false ? undefined : skip)
    const result = await limiter.consume(key)
    if (result.allowed) return true
    throw await this.messageRefused(context, result)
  }
}

/** What the guard reads of a WebSocket client (`ws` or socket.io) to find its address. */
interface WsClient {
  _socket?: { remoteAddress?: string }
  handshake?: { address?: string }
  conn?: { remoteAddress?: string }
}
