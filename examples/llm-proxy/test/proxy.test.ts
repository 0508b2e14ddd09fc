import { storeKinds } from '@sluice/example-keyed-stores'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import OpenAI from 'openai'
import { describe, expect, it, onTestFinished } from 'vitest'
import { budgetKey, startProxy } from '../src/proxy'
import type { Usage } from '../src/tokens'
import { fakeUpstream } from './fake-upstream'

const LIMITS = { requestsPerMinute: 60, tokensPerMinute: 10_000, tokensPerDay: 100_000 }
// 100 characters are 25 prompt tokens by the estimate; a request without max_tokens
// reserves 1000 completion tokens more: 1025 in all.
const PROMPT: { role: 'user'; content: string }[] = [{ role: 'user', content: 'x'.repeat(100) }]

const usage = (prompt: number, completion: number): Usage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
})
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i} `)

interface Chunk {
  choices: { delta: { content?: string } }[]
  usage?: Usage | null
}

/** Reads a streamed answer's events one by one, as they arrive. */
function events(response: Response) {
  const iterator = response
    .body!.pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    [Symbol.asyncIterator]()
  return {
    /** The data of the next `n` events. */
    async next(n: number): Promise<string[]> {
      const out: string[] = []
      for (let i = 0; i < n; i++) {
        const { value, done } = await iterator.next()
        if (done) throw new Error(`the stream ended after ${out.length} of ${n} more events`)
        out.push(value.data)
      }
      return out
    },
    /** The data of every event to the stream's end. */
    async rest(): Promise<string[]> {
      const out: string[] = []
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        out.push(next.value.data)
      }
      return out
    },
  }
}

const content = (data: readonly string[]) =>
  data
    .filter((d) => d !== '[DONE]')
    .map((d) => (JSON.parse(d) as Chunk).choices[0]?.delta.content ?? '')
    .join('')

describe.each(storeKinds())('the LLM proxy on the $name store', (kind) => {
  async function start() {
    const opened = kind.open()
    const upstream = await fakeUpstream()
    onTestFinished(() => upstream.close())
    const proxy = await startProxy({ upstream: upstream.url, store: opened.store, limits: LIMITS })
    onTestFinished(() => proxy.close())
    /** What is left of an API key's three budgets. */
    const left = async (apiKey: string) =>
      Object.fromEntries(
        (await proxy.limiter.get(budgetKey(apiKey))).map((s) => [s.policy, s.remaining]),
      )
    const chat = (apiKey: string, body: Record<string, unknown> = {}, signal?: AbortSignal) =>
      fetch(`${proxy.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: PROMPT, ...body }),
        ...(signal === undefined ? {} : { signal }),
      })
    return { ...opened, upstream, proxy, left, chat }
  }

  it('streams the answer as it arrives and refunds what a small answer did not use', async () => {
    const { upstream, left, chat, timed } = await start()
    const call = upstream.expect({ chunks: words(40), usage: usage(25, 40), holdAfter: 2 })
    const response = await chat('sk-ann', { stream: true })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const answer = events(response)
    // The role chunk and two words arrive while the upstream is still generating.
    expect(content(await answer.next(3))).toBe('w0 w1 ')
    // Meanwhile the estimate is reserved: 1 request and 1025 tokens.
    expect(await left('sk-ann')).toEqual({ rpm: 59, tpm: timed(8975), tpd: 98_975 })
    call.release()
    const rest = await answer.rest()
    expect(content(rest)).toBe(words(40).slice(2).join(''))
    // The client did not ask for usage, so the upstream's usage chunk is not passed on.
    expect(rest.at(-1)).toBe('[DONE]')
    expect(rest.some((d) => d !== '[DONE]' && (JSON.parse(d) as Chunk).choices.length === 0)).toBe(
      false,
    )
    // The proxy asked the upstream for it, and settled with it: 65 tokens, 960 given back.
    expect((await call.request).stream_options).toEqual({ include_usage: true })
    expect(await call.ended).toBe('finished')
    await expect.poll(() => left('sk-ann')).toEqual({ rpm: 59, tpm: timed(9935), tpd: 99_935 })
  })

  it('charges a 10k-token answer reserved at 1k in full, and the next request waits out the debt', async () => {
    const { upstream, left, chat, clock } = await start()
    upstream.expect({ chunks: words(10_000), usage: usage(25, 10_000) })
    const response = await chat('sk-ann', { stream: true, stream_options: { include_usage: true } })
    const data = await events(response).rest()
    expect(data).toHaveLength(1 + 10_000 + 1 + 1 + 1) // role, words, stop, usage, [DONE]
    // The client asked for usage: it gets the upstream's chunk.
    expect((JSON.parse(data.at(-2)!) as Chunk).usage).toEqual(usage(25, 10_000))
    // 10,025 tokens against 1025 reserved: 9000 more are taken, 25 beyond the bucket.
    await expect.poll(() => left('sk-ann')).toEqual({ rpm: 59, tpm: 0, tpd: 89_975 })

    // The next estimate needs the 25 owed plus its own 1025 tokens, at 6 ms a token: 6.3 s.
    const refused = await chat('sk-ann')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toEqual(kind.movesTime ? '7' : expect.any(String))
    expect(await refused.json()).toEqual({
      error: {
        message: kind.movesTime
          ? 'Rate limit reached on tokens per min (TPM): Limit 10000, Remaining 0, Requested 1025. Please try again in 7s.'
          : expect.stringMatching(/^Rate limit reached on tokens per min \(TPM\)/),
        type: 'tokens',
        param: null,
        code: 'rate_limit_exceeded',
      },
    })
    // Refused before the upstream: it saw no request, and no budget was touched.
    expect(upstream.unexpected).toBe(0)
    expect(await left('sk-ann')).toEqual({ rpm: 59, tpm: 0, tpd: 89_975 })
    // Another API key has budgets of its own.
    upstream.expect({ chunks: ['ok'], usage: usage(25, 1) })
    expect((await chat('sk-bob')).status).toBe(200)

    if (clock === undefined) return // A store deciding by its own clock: the rest needs time moved.
    clock.advance(6299)
    const early = await chat('sk-ann')
    expect([early.status, early.headers.get('retry-after')]).toEqual([429, '1'])
    clock.advance(1)
    upstream.expect({ chunks: ['ok'], usage: usage(25, 1) })
    expect((await chat('sk-ann')).status).toBe(200)
  })

  it('settles an answer its client abandoned with what came so far, or the estimate if nothing did', async () => {
    const { upstream, left, chat, timed } = await start()
    const call = upstream.expect({ chunks: words(500), usage: usage(25, 500), holdAfter: 3 })
    const leaving = new AbortController()
    const response = await chat('sk-ann', { stream: true }, leaving.signal)
    expect(content(await events(response).next(4))).toBe('w0 w1 w2 ')
    leaving.abort()
    // The proxy cancels the upstream request, so the upstream stops generating...
    expect(await call.ended).toBe('cancelled')
    // ...and charges the prompt's 25 estimated tokens and the 3 that came.
    await expect.poll(() => left('sk-ann')).toEqual({ rpm: 59, tpm: timed(9972), tpd: 99_972 })

    // A client that leaves before any content came: its 1025 reserved tokens stand.
    const silent = upstream.expect({ chunks: words(500), usage: usage(25, 500), holdAfter: 0 })
    const impatient = new AbortController()
    const waiting = await chat('sk-ann', { stream: true }, impatient.signal)
    expect(content(await events(waiting).next(1))).toBe('') // the role chunk only
    impatient.abort()
    expect(await silent.ended).toBe('cancelled')
    await expect.poll(() => left('sk-ann')).toEqual({ rpm: 58, tpm: timed(8947), tpd: 98_947 })
  })

  it('shows the three policies in RateLimit-Policy and RateLimit', async () => {
    const { upstream, chat } = await start()
    upstream.expect({ chunks: ['Hello'], usage: usage(25, 40) })
    const first = await chat('sk-ann')
    expect(first.status).toBe(200)
    expect(((await first.json()) as { usage: Usage }).usage).toEqual(usage(25, 40))
    expect(first.headers.get('ratelimit-policy')).toBe(
      '"rpm";q=60;w=60, "tpm";q=10000;w=60, "tpd";q=100000;w=86400',
    )
    // rpm: the request leaves the minute with its 6 s slot; tpm: a token comes back every
    // 6 ms; tpd: the request leaves the day with its hour slot.
    expect(first.headers.get('ratelimit')).toEqual(
      kind.movesTime
        ? '"rpm";r=59;t=66, "tpm";r=8975;t=1, "tpd";r=98975;t=90000'
        : expect.stringMatching(/^"rpm";r=59;t=\d+, "tpm";r=\d+;t=\d+, "tpd";r=98975;t=\d+$/),
    )
    // The next one shows the first settled at 65 tokens, and its own 1025 reserved.
    upstream.expect({ chunks: ['Hello'], usage: usage(25, 40) })
    const second = await chat('sk-ann')
    expect(second.headers.get('ratelimit')).toEqual(
      kind.movesTime
        ? '"rpm";r=58;t=66, "tpm";r=8910;t=1, "tpd";r=98910;t=90000'
        : expect.stringMatching(/^"rpm";r=58;t=\d+, "tpm";r=\d+;t=\d+, "tpd";r=98910;t=\d+$/),
    )
  })

  it('passes an upstream refusal through and charges it no tokens', async () => {
    const { upstream, left, chat, timed } = await start()
    upstream.expect({ status: 400 })
    const refused = await chat('sk-ann', { stream: true })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toEqual({
      error: { message: 'refused upstream', type: 'invalid_request_error' },
    })
    await expect.poll(() => left('sk-ann')).toEqual({ rpm: 59, tpm: timed(10_000), tpd: 100_000 })

    // An upstream out of reach: 502, and no tokens either.
    await upstream.close()
    const unreachable = await chat('sk-ann')
    expect(unreachable.status).toBe(502)
    expect(((await unreachable.json()) as { error: { type: string } }).error.type).toBe(
      'upstream_error',
    )
    await expect.poll(() => left('sk-ann')).toEqual({ rpm: 58, tpm: timed(10_000), tpd: 100_000 })
  })

  it('tells the client when the upstream breaks off mid-stream, and charges what came', async () => {
    const { upstream, left, chat, timed } = await start()
    upstream.expect({ chunks: words(500), usage: usage(25, 500), cutAfter: 2 })
    const data = await events(await chat('sk-ann', { stream: true })).rest()
    expect(content(data.slice(0, -1))).toBe('w0 w1 ')
    expect(JSON.parse(data.at(-1)!)).toMatchObject({ error: { type: 'upstream_error' } })
    // The prompt's 25 estimated tokens and the 2 that came.
    await expect.poll(() => left('sk-ann')).toEqual({ rpm: 59, tpm: timed(9973), tpd: 99_973 })
  })

  it('refuses a request without an API key, with a body it cannot estimate or too large to ever fit, counting nothing', async () => {
    const { proxy, upstream, left, chat, timed } = await start()
    const anonymous = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: PROMPT }),
    })
    expect(anonymous.status).toBe(401)
    const bad = await chat('sk-ann', { max_tokens: -1 })
    expect([bad.status, await bad.json()]).toEqual([
      400,
      {
        error: {
          message: '"max_tokens" must be a positive integer',
          type: 'invalid_request_error',
          param: null,
          code: null,
        },
      },
    ])
    // 25 + 20,000 tokens can never fit a budget of 10,000 a minute: refused for good.
    const large = await chat('sk-ann', { max_tokens: 20_000 })
    expect([large.status, await large.json()]).toEqual([
      400,
      {
        error: {
          message:
            'Request too large: Limit 10000 tokens, Requested 20025. Lower max_tokens or shorten the prompt.',
          type: 'invalid_request_error',
          param: null,
          code: 'request_too_large',
        },
      },
    ])
    expect(upstream.unexpected).toBe(0)
    expect(await left('sk-ann')).toEqual({ rpm: 60, tpm: timed(10_000), tpd: 100_000 })
  })

  it('serves the official OpenAI client, whose RateLimitError carries Retry-After', async () => {
    const { proxy, upstream, left } = await start()
    const openai = new OpenAI({ apiKey: 'sk-ann', baseURL: `${proxy.url}/v1`, maxRetries: 0 })
    upstream.expect({ chunks: ['Hello', ' world'], usage: usage(25, 9_990) })
    const stream = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: PROMPT,
      stream: true,
      stream_options: { include_usage: true },
    })
    let text = ''
    let reported: unknown
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      if (chunk.usage) reported = chunk.usage
    }
    expect([text, reported]).toEqual(['Hello world', usage(25, 9_990)])
    // 10,015 tokens settled: the next estimate must wait.
    await expect.poll(async () => (await left('sk-ann')).tpd).toBe(89_985)
    await expect(
      openai.chat.completions.create({ model: 'gpt-test', messages: PROMPT }),
    ).rejects.toSatisfy(
      (error) =>
        error instanceof OpenAI.RateLimitError &&
        /^\d+$/.test(error.headers?.get('retry-after') ?? '') &&
        (error.error as { type: string }).type === 'tokens',
    )
  })
})
