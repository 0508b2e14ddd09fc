/** The scenarios inside Bun: the app on `Bun.serve`, the client on Bun's `node:http`. */
import { defaultIp } from '../../src/client-address'
import { scenarioApp } from '../scenario-app'
import { runScenarios } from './scenarios'

interface BunServer {
  readonly port: number
  stop(closeActiveConnections?: boolean): Promise<void>
}
declare const Bun: {
  serve(options: {
    port: number
    hostname: string
    fetch: (request: Request, server: BunServer) => Response | Promise<Response>
  }): BunServer
}

await runScenarios(
  'Bun',
  async (spec) => {
    const { app, middleware } = scenarioApp(spec, defaultIp)
    // Bun passes the server as the handler's second argument: Hono's c.env.
    const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: app.fetch })
    return { port: server.port, middleware, close: () => server.stop(true) }
  },
  (line) => {
    process.stdout.write(line)
  },
)
