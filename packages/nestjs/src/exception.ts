import { HttpException } from '@nestjs/common'
import type { Refusal } from '@sluice/http/adapter'
import type { NestResponse } from './accessors'

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

  constructor(status: number, refusal: Refusal, res?: NestResponse) {
    super(bodyOf(status, refusal), status)
    this.name = 'RateLimitException'
    this.refusal = refusal
    if (res !== undefined && refusal.contentType.endsWith('problem+json'))
      sendSelf(res, status, refusal)
  }
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
