import type { Decision } from '@sluice/http'
import type { RequestAccessors } from '@sluice/http/adapter'
import { headerOf, type NodeAccessors, requestSignal } from '@sluice/http/node'
import type { HookHandlerDoneFunction as Done, FastifyReply, FastifyRequest } from 'fastify'

/** What `onLimited` is called with in Fastify. */
export type OnLimited = (req: FastifyRequest, reply: FastifyReply, decision: Decision) => unknown

/** Each instance's `trustProxy`, found once: finding it takes microseconds. */
const trustSettings = new WeakMap<object, unknown>()

/**
 * Fastify's `trustProxy` option, which it keeps only among the options of the instance
 * (under its `fastify.options` symbol): no public API reports it.
 */
function trustProxy({ server }: FastifyRequest): unknown {
  if (!trustSettings.has(server)) trustSettings.set(server, optionsOf(server)?.trustProxy)
  return trustSettings.get(server)
}

function optionsOf(server: object): { trustProxy?: unknown } | undefined {
  for (let o: object | null = server; o !== null; o = Object.getPrototypeOf(o)) {
    const key = Object.getOwnPropertySymbols(o).find((s) => s.description === 'fastify.options')
    if (key !== undefined) return (o as Record<symbol, { trustProxy?: unknown }>)[key]
  }
}

/**
 * How `@sluice/http` reads a Fastify request: `request.ip` honours Fastify's `trustProxy`;
 * the route pattern (`/users/:id`) is known in `onRequest`, since Fastify routes first.
 */
export const fastifyRequest: RequestAccessors<FastifyRequest> = {
  ip: (request) => request.ip,
  method: (request) => request.method,
  path: (request) => request.url.split('?', 1)[0] ?? '/',
  route: (request) => request.routeOptions.url,
  header: (request, name) => headerOf(request.headers, name),
  proxy: {
    texts: {
      permissive:
        "Fastify's `trustProxy` is true, so request.ip is the leftmost X-Forwarded-For address, which any client can set: every request can pick its own rate-limit key. Set `trustProxy` to the number of proxies in front of the app, or to their addresses.",
      untrusted:
        "An X-Forwarded-For header arrived while Fastify's `trustProxy` is off: if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Set `trustProxy` (e.g. Fastify({ trustProxy: 1 })); the header is ignored until then.",
      noProxy: (watched) =>
        `Fastify's \`trustProxy\` is on, but none of the first ${watched} requests carried X-Forwarded-For: if no proxy is in front of the app, any client can send that header and choose its own rate-limit key. Turn \`trustProxy\` off, or check that the proxy sets the header.`,
    },
    view: (request) => {
      const setting = trustProxy(request)
      return {
        trusted: Boolean(setting),
        permissive: setting === true,
        forwarded: request.headers['x-forwarded-for'] !== undefined,
      }
    },
  },
}

/** How `@sluice/http/node` writes to, answers and watches a Fastify reply. */
export const fastifyResponse: NodeAccessors<FastifyRequest, FastifyReply, Done> = {
  getHeader: (reply, name) => reply.getHeader(name),
  setHeader: (reply, name, value) => {
    reply.header(name, value)
  },
  signal: (request, reply) => requestSignal(request.raw, reply.raw),
  status: (reply) => reply.statusCode,
  incoming: (request) => request.raw,
  outgoing: (reply) => reply.raw,
  send: (_request, reply, status, { contentType, body }) => {
    reply.code(status).type(contentType).send(body)
  },
  limited: (onLimited, request, reply, _done, decision) =>
    (onLimited as OnLimited)(request, reply, decision),
}
