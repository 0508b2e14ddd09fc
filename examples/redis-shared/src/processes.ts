import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'

/** A running server.ts process and the port it listens on. */
export interface AppProcess {
  readonly name: string
  readonly port: number
  readonly child: ChildProcess
  /** Stops the process (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>
}

const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url))

/**
 * Starts server.ts in a new Node process (TypeScript through tsx, workspace packages from
 * source) and resolves once it prints its port. `env` is added to this process's environment.
 *
 * @example
 * const app = await startApp('a', { REDIS_URL: 'redis://127.0.0.1:6379' })
 * await fetch(`http://127.0.0.1:${app.port}/`)
 */
export async function startApp(name: string, env: Record<string, string>): Promise<AppProcess> {
  const child = spawn(
    process.execPath,
    ['--conditions=@sluice/source', '--import', 'tsx', SERVER],
    {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { ...process.env, ...env, INSTANCE: name },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  const exited = once(child, 'exit')
  const port = await new Promise<number>((resolve, reject) => {
    let output = ''
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const line = output.split('\n').find((l) => l.startsWith('{'))
      if (line !== undefined) {
        child.stdout?.off('data', onData)
        resolve((JSON.parse(line) as { port: number }).port)
      }
    }
    child.stdout?.on('data', onData)
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}: ${output}`)))
  })
  return {
    name,
    port,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      await exited
    },
  }
}
