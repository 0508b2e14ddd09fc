import { once } from 'node:events'
import { storeKinds } from '@sluice/example-keyed-stores'
import { describe, expect, it, onTestFinished } from 'vitest'
import { WebSocket } from 'ws'
import { type ChatServerOptions, type ServerFrame, startChatServer } from '../src/chat-server'

/** A real `ws` client that keeps every frame the server sent it. */
class ChatClient {
  readonly frames: ServerFrame[] = []
  readonly #socket: WebSocket
  #changed: () => void = () => {}

  private constructor(socket: WebSocket) {
    this.#socket = socket
    socket.on('message', (data) => {
      this.frames.push(JSON.parse(data.toString()) as ServerFrame)
      this.#changed()
    })
  }

  static async open(url: string, user: string): Promise<ChatClient> {
    const socket = new WebSocket(`${url}/?user=${user}`)
    onTestFinished(() => socket.terminate())
    await once(socket, 'open')
    return new ChatClient(socket)
  }

  /** Sends the messages `ids` (text `m<id>`), then waits for the server's answer to each. */
  async send(...ids: number[]): Promise<ServerFrame[]> {
    for (const id of ids) this.#socket.send(JSON.stringify({ id, text: `m${id}` }))
    const answered = (frame: ServerFrame) =>
      (frame.type === 'ack' || frame.type === 'error') && ids.includes(frame.id as number)
    await this.#until(() => this.frames.filter(answered).length === ids.length)
    return this.frames.filter(answered)
  }

  /** Sends `text` as it is, and waits for the error frame that answers it. */
  async sendRaw(text: string): Promise<ServerFrame> {
    this.#socket.send(text)
    const unanswerable = (frame: ServerFrame) => frame.type === 'error' && frame.id === null
    await this.#until(() => this.frames.some(unanswerable))
    return this.frames.find(unanswerable)!
  }

  /** The texts of the other users' messages received so far. */
  get received(): string[] {
    return this.frames.flatMap((f) => (f.type === 'message' ? [`${f.from}:${f.text}`] : []))
  }

  #until(done: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      this.#changed = () => done() && resolve()
      this.#changed()
    })
  }
}

const ack = (id: number): ServerFrame => ({ type: 'ack', id })
const limited = (id: number, limit: string, retryAfterMs: unknown) => ({
  type: 'error',
  id,
  code: 'rate_limited',
  limit,
  retryAfterMs,
})

// Refills far slower than the defaults, so that even on a store deciding by its own clock,
// which runs while the test does, nothing refills between two messages of a burst.
const limits: ChatServerOptions = {
  perConnection: { algorithm: 'token-bucket', limit: 1, window: '10s', capacity: 5 },
  perUser: { limit: 8, window: '1m' },
}

describe.each(storeKinds())('the chat on the $name store', (kind) => {
  async function start() {
    const opened = kind.open()
    const chat = await startChatServer({ ...limits, store: opened.store })
    onTestFinished(() => chat.close())
    return { ...opened, chat }
  }

  it("drops messages over a connection's limit, answering each with an error frame", async () => {
    const { chat, timed } = await start()
    const ann = await ChatClient.open(chat.url, 'ann')
    const bob = await ChatClient.open(chat.url, 'bob')

    expect(await ann.send(1, 2, 3, 4, 5, 6, 7)).toEqual([
      ack(1),
      ack(2),
      ack(3),
      ack(4),
      ack(5),
      // The bucket holds 5 and refills one every 10 s.
      limited(6, 'messages-per-connection', timed(10_000)),
      limited(7, 'messages-per-connection', timed(10_000)),
    ])
    // Bob's own message is answered after everything sent to him before it: by then he has
    // all of Ann's messages that were delivered, and none of the dropped ones.
    expect(await bob.send(1)).toEqual([ack(1)])
    expect(bob.received).toEqual(['ann:m1', 'ann:m2', 'ann:m3', 'ann:m4', 'ann:m5'])
    expect(ann.received).toEqual(['bob:m1'])
  })

  it("holds a user's limit over all their connections; a message it drops costs the connection nothing", async () => {
    const { chat, timed } = await start()
    const tab1 = await ChatClient.open(chat.url, 'ann')
    const tab2 = await ChatClient.open(chat.url, 'ann')
    const bob = await ChatClient.open(chat.url, 'bob')

    expect(await tab1.send(1, 2, 3, 4, 5)).toEqual([1, 2, 3, 4, 5].map(ack))
    // Ann has 3 of her 8 left, whichever tab she writes from.
    expect(await tab2.send(6, 7, 8, 9, 10)).toEqual([
      ack(6),
      ack(7),
      ack(8),
      // The 8 messages counted in the window's first tenth: they leave it after 66 s.
      limited(9, 'messages-per-user', timed(66_000)),
      limited(10, 'messages-per-user', timed(66_000)),
    ])
    // Bob is another user: his budget is whole.
    expect(await bob.send(1)).toEqual([ack(1)])
    expect(bob.received).toHaveLength(8)

    // Ann's budget is forgiven; tab 2 still has the 2 permits of the messages her user limit
    // dropped (given back to the connection), and no more.
    await chat.perUser.delete('user:ann')
    expect(await tab2.send(11, 12, 13)).toEqual([
      ack(11),
      ack(12),
      limited(13, 'messages-per-connection', timed(10_000)),
    ])
  })

  it.runIf(kind.movesTime)(
    'lets a connection send again once its bucket has refilled',
    async () => {
      const { chat, clock } = await start()
      const ann = await ChatClient.open(chat.url, 'ann')
      expect(await ann.send(1, 2, 3, 4, 5, 6)).toContainEqual(
        limited(6, 'messages-per-connection', 10_000),
      )
      clock!.advance(10_000)
      expect(await ann.send(7, 8)).toEqual([ack(7), limited(8, 'messages-per-connection', 10_000)])
      clock!.advance(66_000)
      // A full bucket again (5), and Ann's 6 messages have left her window.
      expect(await ann.send(9, 10, 11, 12, 13, 14)).toEqual([
        ...[9, 10, 11, 12, 13].map(ack),
        limited(14, 'messages-per-connection', 10_000),
      ])
    },
  )

  it('answers a frame that is not a message with an error; refuses a connection without a user', async () => {
    const { chat } = await start()
    const ann = await ChatClient.open(chat.url, 'ann')
    expect(await ann.sendRaw('hello')).toEqual({ type: 'error', id: null, code: 'bad_frame' })
    const anonymous = new WebSocket(chat.url)
    onTestFinished(() => anonymous.terminate())
    const [code] = (await once(anonymous, 'close')) as [number]
    expect(code).toBe(1008)
  })
})
