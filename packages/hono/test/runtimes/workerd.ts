/**
 * The scenarios inside workerd: one Worker serves every app the scenarios start and runs
 * the scenarios themselves when asked at `/__sluice/run`. Their requests leave through
 * `fetch` and come back in through miniflare's socket (as on Cloudflare, where the edge,
 * not the Worker, holds the client's connection), into this same isolate.
 */
import { memoryStore } from '@sluice/http'
import { type AppSpec, gate, type RunningServer, send, start, until } from '@sluice/http/testing'
import type { ExecutionContext, Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { defaultIp } from '../../src/client-address'
import { scenarioApp } from '../scenario-app'
import { APP_HEADER, setOrigin } from './fetch-http'
import { runScenarios } from './scenarios'

const apps = new Map<number, Hono>()
let ports = 0

async function startApp(spec: AppSpec): Promise<RunningServer> {
  const { app, middleware } = scenarioApp(spec, defaultIp)
  const port = ++ports
  apps.set(port, app)
  return { port, middleware, close: async () => void apps.delete(port) }
}

/**
 * What happens on workerd instead of the shared scenarios about clients that leave early
 * (workerd reports them only once the response has started): nothing is kept for good.
 * (The scenarios' client is `fetch` inside this Worker, whose abort workerd does not pass
 * on as a disconnect, so a client leaving mid-stream is not exercised here.)
 */
function leavingClients(): void {
  describe('hono on workerd > clients that leave', () => {
    it('a client that leaves while its handler runs frees the slot once the handler answers', async () => {
      const store = memoryStore()
      const work = gate()
      const server = await startApp({
        routes: [
          {
            method: 'get',
            path: '/work',
            use: [{ bulkhead: { max: 1, store } }],
            handler: { kind: 'hold', gate: work },
          },
        ],
      })
      try {
        const quitter = start(server, '/work')
        await until(() => work.arrived === 1, 'the request is in the handler')
        quitter.abort()
        expect(store.inFlight).toBe(1)
        work.open()
        await until(() => store.inFlight === 0, 'the slot is released once the handler answered')
        expect((await send(server, '/work')).status).toBe(200)
      } finally {
        await server.close()
      }
    })
  })
}

export default {
  fetch(request: Request, env: unknown, ctx: ExecutionContext): Response | Promise<Response> {
    const url = new URL(request.url)
    if (url.pathname === '/__sluice/run') {
      setOrigin(url.origin)
      const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>()
      const writer = writable.getWriter()
      const encoder = new TextEncoder()
      const done = runScenarios(
        'workerd',
        startApp,
        (line) => writer.write(encoder.encode(line)),
        leavingClients,
      ).finally(() => writer.close())
      ctx.waitUntil(done)
      return new Response(readable, { headers: { 'content-type': 'text/plain' } })
    }
    const app = apps.get(Number(request.headers.get(APP_HEADER)))
    if (app === undefined) return new Response('no such app', { status: 404 })
    return serve(app, request, env, ctx)
  },
}

/**
 * Serves one request, with a timer pending until the app has answered. workerd cancels a
 * request that waits with nothing of its own pending (it "would never generate a
 * response"); here handlers wait for what the scenario, in another request, does: a gate
 * it opens, a `ManualClock` it advances. On real time a waiting handler has its timer.
 */
async function serve(
  app: Hono,
  request: Request,
  env: unknown,
  ctx: ExecutionContext,
): Promise<Response> {
  const busy = setInterval(() => {}, 100)
  try {
    return await app.fetch(request, env, ctx)
  } finally {
    clearInterval(busy)
  }
}
