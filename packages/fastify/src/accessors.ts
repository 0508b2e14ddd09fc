import {
  isPromiseLike,
  type Outcome,
  type RequestAccessors,
  type ResponseAccessors,
} from '@sluice/http/adapter'
import { isClientGone, requestSignal, whenResponseOver } from '@sluice/http/node'
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'

/**
 * How `@sluice/http` reads a Fastify request: `request.ip` honours Fastify's `trustProxy`;
 * the route pattern (`/users/:id`) is known in `onRequest`, since Fastify routes first.
 */
export const fastifyRequest: RequestAccessors<FastifyRequest> = {
  ip: (request) => request.ip,
  method: (request) => request.method,
  path: (request) => request.url.split('?', 1)[0] ?? '/',
  route: (request) => request.routeOptions.url,
  header: (request, name) => {
    const value = request.headers[name]
    return Array.isArray(value) ? value.join(', ') : value
  },
}

/** How `@sluice/http` writes to and watches a Fastify reply. */
export const fastifyResponse: ResponseAccessors<FastifyRequest, FastifyReply> = {
  getHeader: (reply, name) => reply.getHeader(name),
  setHeader: (reply, name, value) => {
    reply.header(name, value)
  },
  signal: (request, reply) => requestSignal(request.raw, reply.raw),
  status: (reply) => reply.statusCode,
}

/**
 * Carries out an outcome in an `onRequest` hook: `done()` for a pass (the response
 * watched when the outcome holds a slot or a refund), `onLimited` or the prepared
 * refusal, which ends the request without calling `done`.
 */
export function answer<D>(
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
  outcome: Outcome,
  onLimited: ((request: FastifyRequest, reply: FastifyReply, decision: D) => unknown) | undefined,
): void {
  if (outcome.action === 'refuse') {
    if (onLimited !== undefined) {
      const handled = onLimited(request, reply, outcome.decision as D)
      if (isPromiseLike(handled)) Promise.resolve(handled).then(undefined, (error) => done(error))
      return
    }
    const refusal = outcome.refusal()
    const send = ({ contentType, body }: { contentType: string; body: string }) => {
      reply.code(outcome.status).type(contentType).send(body)
    }
    if (isPromiseLike(refusal)) Promise.resolve(refusal).then(send, (error) => done(error))
    else send(refusal)
    return
  }
  if (outcome.holds) {
    whenResponseOver(request.raw, reply.raw, outcome)
    // A client that left while the request waited: its slot is already free, nobody to answer.
    if (isClientGone(request.raw, reply.raw)) return
  }
  done()
}

/** A failure with a client still there goes to Fastify's error handling. */
export function fail(
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
  error: unknown,
): void {
  if (!isClientGone(request.raw, reply.raw)) done(error as Error)
}
