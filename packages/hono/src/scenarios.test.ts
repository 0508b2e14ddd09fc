import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { getConnInfo } from '@hono/node-server/conninfo'
import { type AdapterHarness, type AppSpec, runAdapterScenarios } from '@sluice/http/testing'
import { honoCallbacks, scenarioApp } from '../test/scenario-app'

// The same list runs inside Bun, Deno and workerd: see test/runtimes.
export const honoHarness: AdapterHarness = {
  name: 'hono',
  async start(spec: AppSpec) {
    const { app, middleware } = scenarioApp(spec, (c) => getConnInfo(c).remote.address)
    const { server, port } = await new Promise<{
      server: ReturnType<typeof serve>
      port: number
    }>((resolve) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
        resolve({ server, port: (info as AddressInfo).port }),
      )
    })
    return {
      port,
      middleware,
      close: () =>
        new Promise<void>((resolve) => {
          if ('closeAllConnections' in server) server.closeAllConnections()
          server.close(() => resolve())
        }),
    }
  },
  ...honoCallbacks,
}

runAdapterScenarios(honoHarness)
