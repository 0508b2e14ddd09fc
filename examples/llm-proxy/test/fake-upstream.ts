/**
 * A chat completions upstream on a real socket that answers as OpenAI's API does: a stream
 * of Server-Sent Events (`data: {...}` chunks, then `data: [DONE]`) whose last chunk
 * reports `usage` when the request asked for it with `stream_options.include_usage`, or
 * one JSON answer with `usage`. Each answer is scripted by the test, and may pause
 * mid-stream until the test releases it.
 */
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ChatRequest, Usage } from '../src/tokens'

/** The answer to one request. */
export interface Completion {
  /** The answer's content, one chunk each (a real upstream streams about a token a chunk). */
  readonly chunks?: readonly string[]
  /** The counts it reports at the end. */
  readonly usage?: Usage
  /** Pauses after this many content chunks until `release()`. Default: never. */
  readonly holdAfter?: number
  /** Breaks the connection off after this many content chunks. Default: never. */
  readonly cutAfter?: number
  /** Answers this error status instead of a completion. */
  readonly status?: number
}

/** One expected request and what became of its answer. */
export interface Call {
  /** The request's body as it reached the upstream. */
  readonly request: Promise<ChatRequest>
  /** `'finished'` once the answer was sent to its end; `'cancelled'` if its request was closed first. */
  readonly ended: Promise<'finished' | 'cancelled'>
  /** Lets a paused answer go on. */
  release(): void
}

/** A running fake upstream. */
export interface FakeUpstream {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** Requests that found no expected answer (each answered 500). */
  readonly unexpected: number
  /** Scripts the answer to the next request. */
  expect(completion: Completion): Call
  close(): Promise<void>
}

interface Expected {
  readonly completion: Completion
  readonly received: (body: ChatRequest) => void
  readonly ended: (how: 'finished' | 'cancelled') => void
  readonly released: Promise<void>
}

const sse = (res: ServerResponse, data: unknown) =>
  res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`)

async function readJson(req: IncomingMessage): Promise<ChatRequest> {
  let text = ''
  for await (const chunk of req) text += chunk
  return JSON.parse(text) as ChatRequest
}

/** A promise and its resolve function (Promise.withResolvers, which Node 20 lacks). */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((done) => {
    resolve = done
  })
  return { promise, resolve }
}

async function answer(res: ServerResponse, body: ChatRequest, expected: Expected): Promise<void> {
  const { chunks = [], usage, holdAfter, cutAfter, status } = expected.completion
  const base = { id: 'chatcmpl-1', created: 1_780_000_000, model: body.model ?? 'gpt-test' }
  if (status !== undefined) {
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify({ error: { message: 'refused upstream', type: 'invalid_request_error' } }),
    )
    return
  }
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' })
    const message = { role: 'assistant', content: chunks.join('') }
    res.end(
      JSON.stringify({
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message, finish_reason: 'stop' }],
        usage,
      }),
    )
    return
  }
  const withUsage = body.stream_options?.include_usage === true
  // With include_usage, every chunk carries `usage: null` but the last, as OpenAI's do.
  const chunk = (choices: unknown[]) => ({
    ...base,
    object: 'chat.completion.chunk',
    choices,
    ...(withUsage ? { usage: null } : {}),
  })
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  sse(res, chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]))
  for (const [i, content] of chunks.entries()) {
    if (i === holdAfter) await expected.released
    if (i === cutAfter) {
      // What was written goes out first; the answer's end never does.
      res.socket?.end()
      return
    }
    if (res.destroyed) return
    sse(res, chunk([{ index: 0, delta: { content }, finish_reason: null }]))
  }
  if (chunks.length === holdAfter) await expected.released
  if (res.destroyed) return
  sse(res, chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]))
  if (withUsage) sse(res, { ...chunk([]), usage })
  sse(res, '[DONE]')
  res.end()
}

/**
 * Starts a fake upstream on a free loopback port.
 *
 * @example
 * ```ts
 * const upstream = await fakeUpstream()
 * const call = upstream.expect({ chunks: ['Hi'], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })
 * ```
 */
export async function fakeUpstream(): Promise<FakeUpstream> {
  const queue: Expected[] = []
  let unexpected = 0
  const server = createServer(async (req, res) => {
    const expected = queue.shift()
    if (expected === undefined || req.url !== '/v1/chat/completions') {
      unexpected++
      res.writeHead(500).end()
      return
    }
    res.once('close', () => expected.ended(res.writableFinished ? 'finished' : 'cancelled'))
    const body = await readJson(req)
    expected.received(body)
    await answer(res, body, expected)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    get unexpected() {
      return unexpected
    },
    expect(completion) {
      const request = deferred<ChatRequest>()
      const ended = deferred<'finished' | 'cancelled'>()
      const released = deferred<void>()
      queue.push({
        completion,
        received: request.resolve,
        ended: ended.resolve,
        released: released.promise,
      })
      return {
        request: request.promise,
        ended: ended.promise,
        release: () => released.resolve(undefined),
      }
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
