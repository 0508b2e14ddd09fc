import { HttpException } from '@nestjs/common'
import type { Refusal } from '@sluice/http/adapter'
import type { NestResponse } from './nest-http'

const JSON_TYPE = 'application/json'

/**
 * What `SluiceGuard` throws for a refused request (429, or 503 from a bulkhead, or the
 * `statusCode` option): an `HttpException`, so Nest's exception layer sends it and the
 * app's exception filters can reshape it. The RateLimit headers and `Retry-After` are
 * already on the response. Its body is Nest's usual `{ statusCode, message }` for a text
 * `message`, or the `message` object as given.
 *
 * With `problemDetails`, the guard sends the `application/problem+json` answer itself
 * before throwing (Nest's Express adapter would rewrite that content type to
 * `application/json`); the exception still reaches the filters, whose default one then
 * only ends the response.
 *
 * @example
 * ```ts
 * @Catch(RateLimitException)
 * class RateLimitFilter implements ExceptionFilter {
 *   catch(exception: RateLimitException, host: ArgumentsHost) {
 *     host.switchToHttp().getResponse<Response>().status(429).json({ error: 'slow down' })
 *   }
 * }
 * ```
 */
export class RateLimitException extends HttpException {
  /** The refusal as `@sluice/http` serialized it (content type and body text). */
  readonly refusal: Refusal
  /**
   * A GraphQL resolver's refusal only: what the GraphQL error says besides its message,
   * `{ code: 'RATE_LIMITED' | 'SERVICE_UNAVAILABLE', status, retryAfterMs }`. GraphQL
   * servers build the error's `extensions` from the thrown error's own.
   */
  readonly extensions?: GraphQLRefusalExtensions

  constructor(
    status: number,
    refusal: Refusal,
    res?: NestResponse,
    extensions?: GraphQLRefusalExtensions,
  ) {
    // A GraphQL refusal's body has no `statusCode`: Nest's Apollo driver would rewrite an
    // exception that has one into an INTERNAL_SERVER_ERROR, dropping the code given here.
    super(
      extensions === undefined ? bodyOf(status, refusal) : { message: messageOf(status, refusal) },
      status,
    )
    this.name = 'RateLimitException'
    this.refusal = refusal
    if (extensions !== undefined) this.extensions = extensions
    else if (res !== undefined && refusal.contentType.endsWith('problem+json'))
      sendSelf(res, status, refusal)
  }
}

/** The `extensions` of a GraphQL resolver's refusal. */
export interface GraphQLRefusalExtensions {
  /** `'RATE_LIMITED'` for a rate limit, `'SERVICE_UNAVAILABLE'` for a full bulkhead. */
  readonly code: 'RATE_LIMITED' | 'SERVICE_UNAVAILABLE'
  /** The HTTP status the same refusal has over REST (429, 503, or the `statusCode` option). */
  readonly status: number
  /** Milliseconds until the call could pass (`Retry-After`, exact). */
  readonly retryAfterMs: number
}

/**
 * A refused GraphQL resolver call, as `SluiceGuard.graphqlRefused` is given it: which
 * limiter refused, the refusal as REST would send it, and when to retry.
 */
export interface GraphQLRefusal {
  readonly kind: 'rateLimit' | 'bulkhead'
  readonly status: number
  readonly refusal: Refusal
  readonly retryAfterMs: number
}

const DEFAULT_MESSAGES: Record<number, string> = {
  429: 'Too Many Requests',
  503: 'Service Unavailable',
}

/** The text of a refusal: the `message` option's text, or its object's `message` (or problem `title`). */
function messageOf(status: number, { contentType, body }: Refusal): string {
  if (contentType.startsWith(JSON_TYPE) || contentType.endsWith('+json')) {
    const parsed = JSON.parse(body) as { message?: unknown; title?: unknown }
    if (typeof parsed.message === 'string') return parsed.message
    if (typeof parsed.title === 'string') return parsed.title
    return DEFAULT_MESSAGES[status] ?? 'Request refused'
  }
  return body
}

function bodyOf(status: number, { contentType, body }: Refusal): string | Record<string, unknown> {
  if (contentType.startsWith(JSON_TYPE) || contentType.endsWith('+json')) {
    return JSON.parse(body) as Record<string, unknown>
  }
  return { statusCode: status, message: body }
}

type ExpressLike = NestResponse & {
  status(code: number): ExpressLike
  type(contentType: string): ExpressLike
  send(body: string): unknown
}
type FastifyLike = NestResponse & {
  code(code: number): FastifyLike
  type(contentType: string): FastifyLike
  send(body: string): unknown
}

/** Sends a refusal the platform's way, as the Express and Fastify adapters do. */
function sendSelf(res: NestResponse, status: number, { contentType, body }: Refusal): void {
  if (res.raw !== undefined) (res as FastifyLike).code(status).type(contentType).send(body)
  else (res as ExpressLike).status(status).type(contentType).send(body)
}
