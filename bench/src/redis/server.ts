import { type ChildProcess, spawn } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { createServer } from 'node:net'
import { delimiter, join } from 'node:path'

/** The `redis-server` binary: `$REDIS_SERVER`, else the first on `$PATH`; undefined when none. */
export function findRedisServer(): string | undefined {
  const candidates = process.env.REDIS_SERVER
    ? [process.env.REDIS_SERVER]
    : (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'redis-server'))
  return candidates.find((file) => {
    try {
      accessSync(file, constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

/** A throw-away redis-server for one bench run. */
export interface BenchRedis {
  readonly port: number
  readonly version: string
  stop(): Promise<void>
}

/**
 * Starts the bench's own redis-server on a free port, persistence off, and resolves once
 * it answers. Its version comes from `redis-server --version`.
 */
export async function startBenchRedis(bin: string): Promise<BenchRedis> {
  const port = await freePort()
  const child: ChildProcess = spawn(
    bin,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const deadline = performance.now() + 10_000
  while (!/Ready to accept connections/.test(output)) {
    if (child.exitCode !== null || performance.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`redis-server did not start:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const version = /version=([\d.]+)/.exec(output)?.[1] ?? 'unknown'
  return {
    port,
    version,
    async stop() {
      child.kill('SIGTERM')
      await exited
    },
  }
}
