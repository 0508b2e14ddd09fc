import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common'
import { Reflector } from '@nestjs/core'
import type { RateLimitInfo } from '@sluice/http/adapter'
import { type NodeAccessors, respond } from '@sluice/http/node'
import type { KeyedResult } from '@sluice/keyed'
import { andThen, type MaybePromise } from '@sluice/keyed/store'
import { type Admit, nestResponse, noResponse, resolverCall } from './accessors'
import { type GraphQLRefusal, RateLimitException } from './exception'
import { handlerMetadata } from './metadata'
import type { NestRequest, NestResponse } from './nest-http'
import type { BulkheadOptions, RateLimitOptions } from './options'
import { SluiceService } from './sluice.service'

const admit = () => true

type Answer = NodeAccessors<NestRequest, NestResponse, Admit>

/** What a GraphQL context holds (Apollo: `{ req }`, or `{ req, res }`; Mercurius adds `reply`). */
interface GraphQLContext {
  req?: NestRequest & { res?: NestResponse }
  res?: NestResponse
  reply?: NestResponse & { request?: NestRequest }
}

/**
 * The guard that enforces `SluiceModule`'s rate limit, and each handler's `@RateLimit()`,
 * `@SkipRateLimit()` and `@Bulkhead()`: globally (`{ provide: APP_GUARD, useClass:
 * SluiceGuard }`), per controller or per handler (`@UseGuards(SluiceGuard)`), on the
 * Express and the Fastify platform alike. It sends the same RateLimit headers as every
 * sluice adapter and refuses with a {@link RateLimitException}.
 *
 * GraphQL resolvers (`@nestjs/graphql`, Apollo or Mercurius) are limited per call, on the
 * HTTP request of the GraphQL context, with the headers on its response; a refusal is a
 * GraphQL error (see `graphqlRefused`). A WebSocket message is counted by a keyed limiter
 * under `getKey(context)` (default: the client's address) and refused with a
 * `WsException`. Other contexts go through `getRequest` / `getResponse` and `getKey`.
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
    const { skip, own, bulkhead } = handlerMetadata(
      this.reflector,
      context.getHandler(),
      context.getClass(),
    )
    const type = context.getType<string>()
    if (type === 'ws') {
      return skip === true ? true : this.#limitMessage(context, own, skip)
    }
    if (type === 'graphql') return this.#limitResolver(context, skip, own, bulkhead)
    const req = this.getRequest(context)
    const res = this.getResponse(context)
    return this.#limit(context, req, res, skip, own, bulkhead, nestResponse, nestResponse)
  }

  #limit(
    context: ExecutionContext,
    req: NestRequest,
    res: NestResponse,
    skip: boolean | readonly string[] | undefined,
    own: RateLimitOptions | undefined,
    bulkhead: BulkheadOptions | undefined,
    rateLimitAnswer: Answer,
    bulkheadAnswer: Answer,
  ): boolean | Promise<boolean> {
    const next =
      bulkhead === undefined
        ? admit
        : () =>
            respond(
              this.sluice.bulkheadFor(bulkhead).admit(req, res),
              req,
              res,
              admit,
              bulkheadAnswer,
            )
    if (skip === true) return next() as boolean | Promise<boolean>
    const engine = this.sluice.rateLimitFor(own, skip === false ? undefined : skip)
    const key = this.getKey(context)
    const run = (found: string | undefined) => {
      if (found !== undefined) this.sluice.useKey(req, found)
      return respond(engine.admit(req, res), req, res, next, rateLimitAnswer)
    }
    return andThen(key, run) as boolean | Promise<boolean>
  }

  /**
   * One GraphQL resolver call: counted on its own (see `resolverCall`), headers on the
   * HTTP response when the context holds one, a refusal thrown as `graphqlRefused` says.
   */
  #limitResolver(
    context: ExecutionContext,
    skip: boolean | readonly string[] | undefined,
    own: RateLimitOptions | undefined,
    bulkhead: BulkheadOptions | undefined,
  ): boolean | Promise<boolean> {
    const req = this.getRequest(context) as NestRequest | undefined
    if (req === undefined || req === null) {
      throw new TypeError(
        '@sluice/nestjs: this GraphQL context holds no HTTP request (a subscription?): override SluiceGuard.getRequest(context), or put @SkipRateLimit() on the resolver',
      )
    }
    const response = this.getResponse(context) as NestResponse | undefined
    if (response === undefined || response === null) {
      const engine =
        skip === true
          ? undefined
          : this.sluice.rateLimitFor(own, Array.isArray(skip) ? skip : undefined)
      const follows = engine?.refundWhen !== undefined || engine?.settleCost !== undefined
      if (bulkhead !== undefined || follows) {
        throw new TypeError(
          `@sluice/nestjs: ${bulkhead === undefined ? '"refundWhen" and "settle" need' : '@Bulkhead() needs'} the HTTP response, which this GraphQL context does not hold: add it (Apollo on Fastify: context: (req, reply) => ({ req, reply })), or override SluiceGuard.getResponse(context)`,
        )
      }
    }
    const res = response ?? noResponse()
    return this.#limit(
      context,
      resolverCall(req),
      res,
      skip,
      own,
      bulkhead,
      this.#resolverAnswer(context, 'rateLimit'),
      this.#resolverAnswer(context, 'bulkhead'),
    )
  }

  /** How a resolver call is answered: as HTTP, but a refusal is thrown as a GraphQL error. */
  #resolverAnswer(context: ExecutionContext, kind: GraphQLRefusal['kind']): Answer {
    let decided: RateLimitInfo | undefined
    return {
      ...nestResponse,
      expose: (req, name, value) => {
        if (name === 'rateLimit') decided = value as RateLimitInfo
        nestResponse.expose?.(req, name, value)
      },
      send: (_req, res, status, refusal) => {
        // A rate limit knows its exact wait; a bulkhead only its Retry-After.
        const retryAfterMs =
          decided?.retryAfterMs ?? Number(nestResponse.getHeader(res, 'retry-after') ?? 0) * 1000
        throw this.graphqlRefused(context, { kind, status, refusal, retryAfterMs })
      },
    }
  }

  /**
   * The request to limit. Default: the HTTP request (Express's or Fastify's); in a GraphQL
   * resolver, the context's `req` (Apollo, and Mercurius through Nest's driver) or its
   * `reply.request` (Mercurius).
   */
  protected getRequest(context: ExecutionContext): NestRequest {
    if (context.getType<string>() === 'graphql') {
      const ctx = context.getArgByIndex<GraphQLContext | undefined>(2)
      return (ctx?.req ?? ctx?.reply?.request) as NestRequest
    }
    return context.switchToHttp().getRequest<NestRequest>()
  }

  /**
   * The response that takes the headers. Default: the HTTP response; in a GraphQL
   * resolver, the context's `res` or `reply` (Mercurius), or else Express's `req.res`.
   * Apollo on Fastify puts neither in its default context: give it one
   * (`context: (req, reply) => ({ req, reply })`) for headers, or the resolver is limited
   * without them.
   */
  protected getResponse(context: ExecutionContext): NestResponse {
    if (context.getType<string>() === 'graphql') {
      const ctx = context.getArgByIndex<GraphQLContext | undefined>(2)
      return (ctx?.res ?? ctx?.reply ?? ctx?.req?.res) as NestResponse
    }
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

  /**
   * What a refused GraphQL resolver call throws. Default: a {@link RateLimitException}
   * whose message is the refusal's (`'Too Many Requests'`, or the `message` option's
   * text) and whose `extensions` GraphQL servers copy into the error:
   * `{ code: 'RATE_LIMITED', status: 429, retryAfterMs }` (`'SERVICE_UNAVAILABLE'` for
   * a bulkhead). An `HttpException`, so Nest does not log it as a failure.
   *
   * @example
   * ```ts
   * class Guard extends SluiceGuard {
   *   protected override graphqlRefused(context: ExecutionContext, refused: GraphQLRefusal) {
   *     return new GraphQLError('Slow down', { extensions: { code: 'THROTTLED', retryAfterMs: refused.retryAfterMs } })
   *   }
   * }
   * ```
   */
  protected graphqlRefused(_context: ExecutionContext, refused: GraphQLRefusal): Error {
    const { kind, status, refusal, retryAfterMs } = refused
    return new RateLimitException(status, refusal, undefined, {
      code: kind === 'rateLimit' ? 'RATE_LIMITED' : 'SERVICE_UNAVAILABLE',
      status,
      retryAfterMs,
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
    // Dry run counts what passes and refuses nothing (a refusal took nothing).
    if (result.allowed || this.sluice.messageDryRun(own)) return true
    throw await this.messageRefused(context, result)
  }
}

/** What the guard reads of a WebSocket client (`ws` or socket.io) to find its address. */
interface WsClient {
  _socket?: { remoteAddress?: string }
  handshake?: { address?: string }
  conn?: { remoteAddress?: string }
}
