import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
import { type AddressInfo, connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { handlerDone, isClientGone, requestSignal, whenResponseOver } from './node'
import { until } from './testing'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

const servers: { close(): Promise<void> }[] = []

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

/** A real node:http server on an ephemeral port, closed after the test. */
async function serve(handler: Handler) {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const running = {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  servers.push(running)
  return running
}

/** Sends a GET and reads the whole reply. */
function fetchBody(port: number, agent: Agent | false = false): Promise<string> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        body += chunk
      })
      res.on('end', () => resolve(body))
    })
      .on('error', reject)
      .end()
  })
}

/** Responses `whenResponseOver` still tracks on a socket (white box: its private set). */
function pendingOn(socket: object): number {
  const key = Object.getOwnPropertySymbols(socket).find(
    (symbol) => symbol.description === 'sluice.pendingResponses',
  )
  return key === undefined ? 0 : ((socket as Record<symbol, Set<unknown>>)[key]?.size ?? 0)
}

/** A watcher that records every call to done (and, in `events`, to workDone too). */
function recorder() {
  const calls: boolean[] = []
  const events: string[] = []
  return {
    calls,
    events,
    done: (gone: boolean) => {
      calls.push(gone)
      events.push(gone ? 'gone' : 'finished')
    },
    workDone: () => void events.push('work'),
  }
}

describe('whenResponseOver', () => {
  it('calls done(false) once when the response finishes, for each watcher', async () => {
    const first = recorder()
    const second = recorder()
    let closed = false
    const server = await serve((req, res) => {
      whenResponseOver(req, res, first)
      whenResponseOver(req, res, second)
      res.on('close', () => {
        closed = true
      })
      res.end('ok')
    })
    expect(await fetchBody(server.port)).toBe('ok')
    // 'close' follows 'finish': by then a second call would have happened.
    await until(() => closed, 'the response closed')
    expect([first.calls, second.calls]).toEqual([[false], [false]])
  })

  it('calls done(true) once when the client leaves before the response finished', async () => {
    const watcher = recorder()
    let arrived: { req: IncomingMessage; res: ServerResponse } | undefined
    const server = await serve((req, res) => {
      arrived = { req, res }
      whenResponseOver(req, res, watcher)
    })
    const client = httpRequest({ host: '127.0.0.1', port: server.port, agent: false })
    client.on('error', () => {})
    client.end()
    await until(() => arrived !== undefined, 'the request arrived')
    expect(isClientGone(arrived!.req, arrived!.res)).toBe(false)
    client.destroy()
    await until(() => watcher.calls.length > 0, 'done was called')
    expect(watcher.calls).toEqual([true])
    expect(isClientGone(arrived!.req, arrived!.res)).toBe(true)
    // Ending the abandoned response later changes nothing.
    arrived!.res.end()
    expect(watcher.calls).toEqual([true])
  })

  it('calls done at once for a response already over', async () => {
    const finished = recorder()
    const gone = recorder()
    let left: { req: IncomingMessage; res: ServerResponse } | undefined
    const server = await serve((req, res) => {
      if (req.url === '/hold') {
        left = { req, res }
        return
      }
      res.on('finish', () => whenResponseOver(req, res, finished))
      res.end()
    })
    await fetchBody(server.port)
    await until(() => finished.calls.length > 0, 'done was called')
    expect(finished.calls).toEqual([false])
    const client = httpRequest({
      host: '127.0.0.1',
      port: server.port,
      path: '/hold',
      agent: false,
    })
    client.on('error', () => {})
    client.end()
    await until(() => left !== undefined, 'the request arrived')
    client.destroy()
    await until(() => left!.req.socket.destroyed, 'the socket closed')
    whenResponseOver(left!.req, left!.res, gone)
    expect(gone.calls).toEqual([true])
  })

  it('a destroyed response ended afterwards never finished: done(true), whenever it is watched', async () => {
    // Express's error handler ends a response the handler destroyed; Node then reports
    // writableFinished, though nothing reached the client and 'finish' never came.
    const before = recorder()
    const after = recorder()
    let ended = false
    const server = await serve((req, res) => {
      whenResponseOver(req, res, before)
      res.on('error', () => {})
      res.destroy(new Error('handler failed'))
      res.end()
      expect(res.writableFinished).toBe(true)
      whenResponseOver(req, res, after)
      ended = true
    })
    const client = httpRequest({ host: '127.0.0.1', port: server.port, agent: false })
    client.on('error', () => {})
    client.end()
    await until(() => ended && before.calls.length > 0, 'the response is over')
    expect([before.calls, after.calls]).toEqual([[true], [true]])
  })

  it('endsWork: the work is over when the handler ends the response, also after its client left', async () => {
    const finished = recorder()
    const left = recorder()
    let held: ServerResponse | undefined
    const server = await serve((req, res) => {
      if (req.url === '/left') {
        whenResponseOver(req, res, left, true)
        held = res
        return
      }
      whenResponseOver(req, res, finished, true)
      res.end('ok')
    })
    expect(await fetchBody(server.port)).toBe('ok')
    await until(() => finished.events.length === 2, 'the response finished')
    expect(finished.events).toEqual(['work', 'finished'])
    const client = httpRequest({
      host: '127.0.0.1',
      port: server.port,
      path: '/left',
      agent: false,
    })
    client.on('error', () => {})
    client.end()
    await until(() => held !== undefined, 'the request arrived')
    client.destroy()
    await until(() => left.events.length === 1, 'the response is over')
    expect(left.events).toEqual(['gone'])
    held!.end('too late')
    expect(left.events).toEqual(['gone', 'work'])
    // Its own end again: what was wrapped is gone.
    expect(Object.hasOwn(held!, 'end')).toBe(false)
  })

  it('handlerDone: a framework that knows when its handler is done says so', async () => {
    const watcher = recorder()
    let held: ServerResponse | undefined
    const server = await serve((req, res) => {
      whenResponseOver(req, res, watcher, true)
      held = res
    })
    const client = httpRequest({ host: '127.0.0.1', port: server.port, agent: false })
    client.on('error', () => {})
    client.end()
    await until(() => held !== undefined, 'the request arrived')
    handlerDone(held!)
    expect(watcher.events).toEqual(['work'])
    client.destroy()
    await until(() => watcher.events.length === 2, 'the response is over')
    expect(watcher.events).toEqual(['work', 'gone'])
  })

  it('calls done(true) for a pipelined request whose socket closes before its turn', async () => {
    const watchers = [recorder(), recorder()]
    const closes = [0, 0]
    let arrived = 0
    const server = await serve((req, res) => {
      const index = arrived++
      res.on('close', () => {
        closes[index]!++
      })
      whenResponseOver(req, res, watchers[index]!)
      // Neither is answered: the second waits behind the first on the connection.
    })
    const socket = connect({ host: '127.0.0.1', port: server.port })
    socket.on('error', () => {})
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    socket.write('GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n')
    await until(() => arrived === 2, 'both pipelined requests reached the handler')
    socket.destroy()
    await until(
      () => watchers.every((w) => w.calls.length > 0),
      'done was called for both requests',
    )
    expect(watchers.map((w) => w.calls)).toEqual([[true], [true]])
    // Only the socket could tell: the second response itself never closed.
    expect(closes).toEqual([1, 0])
  })

  it('leaves nothing on a keep-alive socket: 50 requests, a bounded close listener count', async () => {
    const watcher = recorder()
    const listeners: number[] = []
    const ports = new Set<number | undefined>()
    const pending: number[] = []
    const server = await serve((req, res) => {
      // What earlier responses left on the socket, before this one is watched.
      pending.push(pendingOn(req.socket))
      whenResponseOver(req, res, watcher)
      ports.add(req.socket.remotePort)
      listeners.push(req.socket.listenerCount('close'))
      res.end('ok')
    })
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      for (let i = 0; i < 50; i++) await fetchBody(server.port, agent)
    } finally {
      agent.destroy()
    }
    await until(() => watcher.calls.length === 50, 'every response was over')
    expect(ports.size).toBe(1)
    expect(watcher.calls).toEqual(Array(50).fill(false))
    // One listener of ours at most, added by the first request and reused after.
    expect(new Set(listeners.slice(1))).toEqual(new Set([listeners[0]]))
    expect(listeners[0]).toBeLessThanOrEqual(3)
    expect(pending).toEqual(Array(50).fill(0))
  })
})

describe('requestSignal', () => {
  it('aborts with an AbortError when the client leaves, not when the response finishes', async () => {
    const signals: AbortSignal[] = []
    const server = await serve((req, res) => {
      signals.push(requestSignal(req, res))
    })
    const client = httpRequest({ host: '127.0.0.1', port: server.port, path: '/', agent: false })
    client.on('error', () => {})
    client.end()
    await until(() => signals.length === 1, 'the request arrived')
    client.destroy()
    await until(() => signals[0]!.aborted, 'the signal aborted')
    expect(signals[0]!.reason).toMatchObject({
      name: 'AbortError',
      message: 'sluice: the client disconnected before its response was over',
    })
    let closed = false
    const finishing = await serve((req, res) => {
      signals.push(requestSignal(req, res))
      res.on('close', () => {
        closed = true
      })
      res.end()
    })
    await fetchBody(finishing.port)
    await until(() => closed, 'the response closed')
    expect(signals[1]!.aborted).toBe(false)
  })
})
