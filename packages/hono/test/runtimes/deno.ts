/** The scenarios inside Deno: the app on `Deno.serve`, the client on Deno's `node:http`. */
import { defaultIp } from '../../src/client-address'
import { scenarioApp } from '../scenario-app'
import { runScenarios } from './scenarios'

interface DenoServer {
  readonly addr: { readonly port: number }
  readonly finished: Promise<void>
  shutdown(): Promise<void>
}
declare const Deno: {
  serve(
    options: { port: number; hostname: string; signal: AbortSignal; onListen(): void },
    handler: (request: Request, info: unknown) => Response | Promise<Response>,
  ): DenoServer
  stdout: { write(bytes: Uint8Array): Promise<number> }
}

const encoder = new TextEncoder()

await runScenarios(
  'Deno',
  async (spec) => {
    const { app, middleware } = scenarioApp(spec, defaultIp)
    const abort = new AbortController()
    // Deno passes the connection's info as the handler's second argument: Hono's c.env.
    const server = Deno.serve(
      { port: 0, hostname: '127.0.0.1', signal: abort.signal, onListen() {} },
      app.fetch,
    )
    return {
      port: server.addr.port,
      middleware,
      close: async () => {
        abort.abort()
        await server.finished
      },
    }
  },
  async (line) => {
    const bytes = encoder.encode(line)
    let written = 0
    while (written < bytes.length) written += await Deno.stdout.write(bytes.subarray(written))
  },
)
