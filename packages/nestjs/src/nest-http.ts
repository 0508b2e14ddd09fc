import type { IncomingMessage, ServerResponse } from 'node:http'

/**
 * The request a Nest HTTP handler sees: Express's (an `IncomingMessage` with `ip`, `app`,
 * `route`) or Fastify's (`FastifyRequest`, with the Node request as `raw`). Typed by what
 * the guard reads, so this package imports neither platform.
 */
export interface NestRequest {
  readonly method?: string
  readonly url?: string
  readonly originalUrl?: string
  readonly ip?: string
  readonly headers: IncomingMessage['headers']
  /** Fastify: the Node request. */
  readonly raw?: IncomingMessage
  /** Fastify: the matched route. */
  readonly routeOptions?: { readonly url?: string }
  /** Express: the matched route. */
  readonly route?: { readonly path?: unknown }
  /** Express: the application, for its `trust proxy` setting. */
  readonly app?: { get(name: string): unknown }
  /** Express: the response, whose `locals` takes the guard's per-request marks. */
  readonly res?: { readonly locals?: object }
  /** Fastify: the instance, holding its `trustProxy` option. */
  readonly server?: object
}

/** The response of a Nest HTTP handler: Express's `Response` or Fastify's `FastifyReply`. */
export interface NestResponse {
  /** Fastify: the Node response. */
  readonly raw?: ServerResponse
  /** Fastify: sets a reply header. */
  header?(name: string, value: string): unknown
  getHeader(name: string): number | string | readonly string[] | undefined
}
