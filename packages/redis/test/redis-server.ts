import { type ChildProcess, spawn } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { delimiter, join } from 'node:path'

/**
 * The `redis-server` binary: `$REDIS_SERVER` when set, else the first one on `$PATH`.
 * `undefined` when there is none, so callers can decide between skipping and failing.
 */
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

/** A port nobody listens on right now (the OS picks it, we release it at once). */
export function freePort(): Promise<number> {
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

/** A `redis-server` child process owned by a test. */
export interface RedisServer {
  readonly port: number
  /** True while the process runs and is not paused. */
  readonly alive: boolean
  /** Kills the server (SIGTERM, then SIGKILL) and waits until it has exited. */
  stop(): Promise<void>
  /** Crashes the server (SIGKILL: no shutdown, no goodbye to its replicas) and waits for it. */
  kill(): Promise<void>
  /** Freezes the process (SIGSTOP): connections stay open and nothing answers, like a hung host. */
  pause(): void
  /** Thaws a paused server (SIGCONT). */
  resume(): void
}

export interface StartOptions {
  /** Default: a free port. Pass the port of a stopped server to bring it back at the same address. */
  port?: number
  /** Extra `redis-server` arguments, e.g. `['--cluster-enabled', 'yes']`. */
  args?: readonly string[]
}

/**
 * Starts a throw-away `redis-server` on 127.0.0.1 with persistence off, and resolves once
 * it answers PING. Rejects with the server's output when it cannot start.
 */
export async function startRedisServer(options: StartOptions = {}): Promise<RedisServer> {
  const bin = findRedisServer()
  if (bin === undefined) throw new Error('redis-server not found on PATH (or $REDIS_SERVER)')
  const port = options.port ?? (await freePort())
  const child = spawn(
    bin,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  try {
    await waitForPing(port, child, () => output)
  } catch (error) {
    child.kill('SIGKILL')
    await exited
    throw error
  }
  let paused = false
  return {
    port,
    get alive() {
      return !paused && child.exitCode === null && child.signalCode === null
    },
    stop: () => stopChild(child, exited),
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    },
    pause: () => {
      paused = true
      child.kill('SIGSTOP')
    },
    resume: () => {
      paused = false
      child.kill('SIGCONT')
    },
  }
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  // A paused server ignores SIGTERM until it runs again.
  child.kill('SIGCONT')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
  await exited
  clearTimeout(timer)
}

async function waitForPing(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = performance.now() + 10_000
  while (performance.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`redis-server exited with ${child.exitCode}:\n${output()}`)
    }
    if (await ping(port)) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`redis-server on port ${port} did not answer PING within 10 s:\n${output()}`)
}

/** One raw RESP `PING`, so the harness needs no client library. */
export function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' })
    let reply = ''
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1_000, () => done(false))
    socket.on('error', () => done(false))
    socket.on('connect', () => socket.write('PING\r\n'))
    socket.on('data', (chunk) => {
      reply += chunk.toString()
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'))
    })
  })
}
