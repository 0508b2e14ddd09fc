import cluster, { type Worker } from 'node:cluster'
import { existsSync, unlinkSync } from 'node:fs'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { Connection, type Host } from './host'
import { type Batch, isBatch, type Reply, type Request, TAG } from './protocol'

/** What a worker's link hands its replies and its end to. */
export interface LinkHandlers {
  receive(replies: Batch<Reply>): void
  /** The link failed these requests (they could not be sent). */
  failed(requests: readonly Request[], error: Error): void
  /** The link is gone: every request still unanswered never will be. */
  closed(): void
}

/** A worker's way to the host: IPC to the `node:cluster` primary, or a local socket. */
export interface Link {
  /** False once closed: a request sent then fails at once. */
  readonly open: boolean
  send(requests: readonly Request[]): void
  close(): void
}

/** Opens a link; called again for a new one after the last closed (a socket can reconnect, IPC cannot). */
export type Connect = (handlers: LinkHandlers) => Link

const ignore = () => {}

/** A `node:cluster` worker's link: `process.send` to the primary, replies on `process`'s `message`. */
export function ipcLink(store: string): Connect {
  return (handlers) => {
    let open = process.connected
    const onMessage = (message: unknown) => {
      if (isBatch<Reply>(message, store)) handlers.receive(message)
    }
    const onDisconnect = () => {
      if (!open) return
      open = false
      handlers.closed()
    }
    process.on('message', onMessage)
    process.on('disconnect', onDisconnect)
    return {
      get open() {
        return open && process.connected
      },
      send(requests) {
        const batch: Batch<Request> = { tag: TAG, store, batch: requests }
        // Without a callback, a failed send is an 'error' event on process: uncaught.
        process.send!(batch, undefined, undefined, (error: Error | null) => {
          if (error !== null) handlers.failed(requests, error)
        })
      },
      close() {
        process.off('message', onMessage)
        process.off('disconnect', onDisconnect)
        onDisconnect()
      },
    }
  }
}

/**
 * Serves the `node:cluster` workers from the primary: each worker is one connection; its
 * exit (or disconnect: its releases can no longer arrive) frees the slots it held.
 * Returns what stops serving.
 */
export function serveWorkers(host: Host, store: string): () => void {
  const connections = new Map<Worker, Connection>()
  const onMessage = (worker: Worker, message: unknown) => {
    if (!isBatch<Request>(message, store)) return
    let connection = connections.get(worker)
    if (connection === undefined) {
      connection = new Connection()
      connections.set(worker, connection)
    }
    const reply = host.answer(connection, message)
    if (worker.isConnected()) worker.send(reply, undefined, ignore)
  }
  const onGone = (worker: Worker) => {
    const connection = connections.get(worker)
    if (connection === undefined) return
    connections.delete(worker)
    host.closed(connection)
  }
  cluster.on('message', onMessage)
  cluster.on('disconnect', onGone)
  cluster.on('exit', onGone)
  return () => {
    cluster.off('message', onMessage)
    cluster.off('disconnect', onGone)
    cluster.off('exit', onGone)
    for (const worker of [...connections.keys()]) onGone(worker)
  }
}

/** Calls `line` with each newline-ended JSON message the socket receives. */
function readLines(socket: Socket, line: (message: unknown) => void): void {
  let buffered = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    buffered += chunk
    let end = buffered.indexOf('\n')
    if (end === -1) return
    let start = 0
    while (end !== -1) {
      line(JSON.parse(buffered.slice(start, end)))
      start = end + 1
      end = buffered.indexOf('\n', start)
    }
    buffered = buffered.slice(start)
  })
}

/** A worker's link over a Unix socket (a named pipe on Windows): newline-delimited JSON. */
export function socketLink(path: string, store: string): Connect {
  return (handlers) => {
    let open = true
    const socket = createConnection(path)
    socket.setNoDelay(true)
    // A link waiting for the host must not keep a process alive that is done otherwise.
    socket.unref()
    readLines(socket, (message) => {
      if (isBatch<Reply>(message, store)) handlers.receive(message)
    })
    socket.on('error', ignore)
    socket.on('close', () => {
      open = false
      handlers.closed()
    })
    return {
      get open() {
        return open
      },
      send(requests) {
        const batch: Batch<Request> = { tag: TAG, store, batch: requests }
        socket.write(`${JSON.stringify(batch)}\n`)
      },
      close() {
        socket.destroy()
      },
    }
  }
}

/**
 * Serves workers on a Unix socket (a named pipe on Windows) at `path`: each socket is one
 * connection, its close frees the slots it held. A socket file left by a host that died
 * is removed first. Resolves with what stops serving.
 */
export async function serveSocket(host: Host, store: string, path: string): Promise<() => void> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.setNoDelay(true)
    const connection = new Connection()
    readLines(socket, (message) => {
      if (!isBatch<Request>(message, store)) return
      socket.write(`${JSON.stringify(host.answer(connection, message))}\n`)
    })
    socket.on('error', ignore)
    socket.on('close', () => {
      sockets.delete(socket)
      host.closed(connection)
    })
  })
  // The host serves as long as the process runs for other reasons (its own server).
  server.unref()
  await listen(server, path)
  return () => {
    server.close()
    for (const socket of sockets) socket.destroy()
  }
}

async function listen(server: Server, path: string): Promise<void> {
  try {
    await listenOnce(server, path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || !(await stale(path))) {
      throw error
    }
    unlinkSync(path)
    await listenOnce(server, path)
  }
}

function listenOnce(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(path, () => {
      server.off('error', reject)
      resolve()
    })
  })
}

/** Whether a socket file is one nobody listens on any more (its host died without removing it). */
function stale(path: string): Promise<boolean> {
  if (process.platform === 'win32' || !existsSync(path)) return Promise.resolve(false)
  return new Promise((resolve) => {
    const probe = createConnection(path)
    probe.once('connect', () => {
      probe.destroy()
      resolve(false)
    })
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'))
  })
}
