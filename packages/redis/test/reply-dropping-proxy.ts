import { createConnection, createServer, type Socket } from 'node:net'

/** A TCP proxy in front of one Redis node that can lose the reply to one command. */
export interface ReplyDroppingProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number
  /**
   * Arms the proxy: the next command whose bytes contain `marker` is passed on to Redis,
   * which runs it, and its reply is dropped with the client's connection (the client
   * sees the connection close with the command unanswered). Resolves once it happened.
   */
  dropReplyTo(marker: string): Promise<void>
  /** Replies dropped so far. */
  readonly dropped: number
  close(): Promise<void>
}

/**
 * Starts a proxy to `127.0.0.1:targetPort`: what a network that fails after a command
 * reached Redis looks like to a client (a load balancer restarting, a NAT entry expiring).
 */
export function replyDroppingProxy(targetPort: number): Promise<ReplyDroppingProxy> {
  const sockets = new Set<Socket>()
  let armed: { marker: string; done: () => void } | undefined
  let dropped = 0
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort })
    sockets.add(client)
    sockets.add(upstream)
    let dropping = false
    client.on('data', (chunk: Buffer) => {
      if (armed !== undefined && chunk.includes(armed.marker)) {
        dropping = true
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (!dropping) {
        client.write(chunk)
        return
      }
      // Redis has run the command and answered: the answer is lost with the connection.
      const done = armed!.done
      armed = undefined
      dropped++
      client.destroy()
      upstream.destroy()
      done()
    })
    const close = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('close', close)
    upstream.on('close', close)
    client.on('error', close)
    upstream.on('error', close)
  })
  return new Promise((resolve, reject) => {
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      resolve({
        port,
        get dropped() {
          return dropped
        },
        dropReplyTo: (marker) =>
          new Promise<void>((done) => {
            armed = { marker, done }
          }),
        close: () =>
          new Promise<void>((closed) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => closed())
          }),
      })
    })
  })
}
