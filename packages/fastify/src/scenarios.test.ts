import { PassThrough } from 'node:stream'
import {
  type AdapterHarness,
  type AppSpec,
  type HandlerSpec,
  type MiddlewareSpec,
  middlewareMemo,
  runAdapterScenarios,
} from '@sluice/http/testing'
import Fastify, { type FastifyReply, type FastifyRequest, type RouteHandlerMethod } from 'fastify'
import { bulkhead } from './bulkhead'
import { rateLimit } from './rate-limit'

function hook(spec: MiddlewareSpec) {
  if ('uncalled' in spec) return (spec.uncalled === 'rateLimit' ? rateLimit : bulkhead) as never
  return 'rateLimit' in spec
    ? rateLimit({ validate: false, ...spec.rateLimit })
    : bulkhead(spec.bulkhead)
}

function handler(spec: HandlerSpec): RouteHandlerMethod {
  const decision = (request: FastifyRequest) => ({ rateLimit: request.rateLimit ?? null })
  switch (spec.kind) {
    case 'json':
      return async (request) => decision(request)
    case 'status':
      return async (request, reply) => reply.code(spec.status).send(decision(request))
    case 'hold':
      return async (request) => {
        await spec.gate.enter(request.bulkhead?.signal)
        return decision(request)
      }
    case 'throw':
      return async () => {
        throw new Error('handler failed')
      }
    case 'stream':
      return async (request, reply) => {
        const body = new PassThrough()
        body.write('first\n')
        void spec.gate.enter(request.bulkhead?.signal).then(() => body.end('last\n'))
        return reply.type('text/plain').send(body)
      }
    case 'destroy':
      return async (_request, reply) => {
        reply.raw.destroy()
        throw new Error('destroyed')
      }
  }
}

export const fastifyHarness: AdapterHarness = {
  name: 'fastify',
  async start(spec: AppSpec) {
    // One trusted proxy (the test client): request.ip is the address it forwarded.
    const app = Fastify({ trustProxy: spec.trustProxy === true ? '127.0.0.1' : false })
    const { onError } = spec
    if (onError !== undefined) {
      app.setErrorHandler((error, _request, reply) => {
        onError(error)
        return reply.code(500).send()
      })
    }
    const built = middlewareMemo(hook)
    for (const use of spec.use ?? []) app.addHook('onRequest', built.get(use))
    for (const route of spec.routes) {
      app.route({
        method: route.method.toUpperCase() as 'GET' | 'POST',
        url: route.path,
        onRequest: (route.use ?? []).map((use) => built.get(use)),
        handler: handler(route.handler),
      })
    }
    await app.listen({ port: 0, host: '127.0.0.1' })
    const address = app.server.address()
    return {
      port: typeof address === 'object' && address !== null ? address.port : 0,
      close: async () => {
        app.server.closeAllConnections()
        await app.close()
      },
      middleware: (use: MiddlewareSpec) => built.get(use),
    }
  },
  header: (request: FastifyRequest, name) => {
    const value = request.headers[name.toLowerCase()]
    return Array.isArray(value) ? value.join(', ') : value
  },
  status: (_request, reply: FastifyReply) => reply.statusCode,
  // Fastify lower-cases header names.
  headerLines: 'fetch',
}

runAdapterScenarios(fastifyHarness)
