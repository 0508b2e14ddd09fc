/**
 * Fastify's wiring for a bulkhead: when its route handlers are done, which an `onRequest`
 * hook cannot see.
 *
 * @module
 */
import diagnostics from 'node:diagnostics_channel'
import { handlerDone } from '@sluice/http/node'
import type { FastifyReply } from 'fastify'

let watching = false

/**
 * Tells `@sluice/http/node` when each route handler is done, which an `onRequest` hook
 * cannot see: Fastify publishes its handlers on the `fastify.request.handler` tracing
 * channel (`end` after a synchronous handler, `asyncEnd` once a promise settled). Only
 * subscribed once a bulkhead exists, so other apps pay nothing.
 */
export function watchHandlers(): void {
  if (watching) return
  watching = true
  const done = (trace: unknown) => handlerDone((trace as { reply: FastifyReply }).reply.raw)
  const returned = (trace: unknown) => (trace as { async: boolean }).async || done(trace)
  diagnostics.subscribe('tracing:fastify.request.handler:end', returned)
  diagnostics.subscribe('tracing:fastify.request.handler:asyncEnd', done)
}
