import { createHash } from 'node:crypto'
import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type RateLimitMiddleware, rateLimit, type Store } from '@sluice/express'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import express, { type Express, type NextFunction, type Request, type Response } from 'express'
import { type ChatRequest, type Tally, tally, tokensUsed, type Usage } from './tokens'

/** Each API key's budget. */
export interface TokenLimits {
  /** Requests per minute (a sliding window). Default 60. */
  requestsPerMinute?: number
  /** Tokens per minute (a token bucket: it refills continuously, as OpenAI's does). Default 10,000. */
  tokensPerMinute?: number
  /** Tokens in any 24 hours (a sliding window of 24 hourly slots). Default 100,000. */
  tokensPerDay?: number
}

/** Options of {@link llmProxy}. */
export interface ProxyOptions {
  /** The upstream's base URL (`https://api.openai.com`): requests go to its `/v1/chat/completions`. */
  upstream: string
  limits?: TokenLimits
  /** Completion tokens reserved for a request that sets no `max_completion_tokens` or `max_tokens`. Default 1000. */
  defaultMaxTokens?: number
  /** Where the budgets live. Default: a memory store; a `redisStore()` shares them across proxies. */
  store?: Store
}

/** The proxy's app and its limiter (`get(budgetKey(apiKey))` reads a key's budget). */
export interface LlmProxy {
  readonly app: Express
  readonly limiter: RateLimitMiddleware
}

/** What an OpenAI-style stream chunk carries that the proxy reads. */
interface CompletionChunk {
  readonly choices?: readonly { readonly delta?: { readonly content?: string | null } }[]
  readonly usage?: Usage | null
}

/** The name each policy has in the headers, and what OpenAI calls it in a refusal. */
const POLICY_NAMES = {
  rpm: 'requests per min (RPM)',
  tpm: 'tokens per min (TPM)',
  tpd: 'tokens per day (TPD)',
} as const

/**
 * The key a budget is kept under: a digest of the API key, never the key itself, which
 * would otherwise sit in the store and in every `sluice:rate-limit` event.
 *
 * @example
 * ```ts
 * await proxy.limiter.get(budgetKey('sk-ann'))
 * ```
 */
export function budgetKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('base64url')
}

/** The bearer token of `Authorization`, if any. */
function apiKeyOf(req: Request): string | undefined {
  const match = /^Bearer (\S+)$/.exec(req.get('authorization') ?? '')
  return match?.[1]
}

/** An error body as OpenAI answers one. */
function openAiError(message: string, type: string, code: string | null = null) {
  return { error: { message, type, param: null, code } }
}

/** Why `body` is not a chat completion request this proxy can estimate, if it is not. */
function invalid(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return 'the body must be a JSON object'
  const { messages, max_tokens, max_completion_tokens, n } = body as Record<string, unknown>
  if (!Array.isArray(messages) || messages.length === 0)
    return '"messages" must be a non-empty array'
  for (const [name, value] of Object.entries({ max_tokens, max_completion_tokens, n })) {
    if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) > 0)) {
      return `"${name}" must be a positive integer`
    }
  }
  return undefined
}

/**
 * An OpenAI-style chat completions proxy (`POST /v1/chat/completions`) that budgets each
 * API key in requests per minute, tokens per minute and tokens per day, in one atomic call
 * per request. A request reserves its estimate (prompt characters / 4, plus its
 * `max_completion_tokens`, `max_tokens` or `defaultMaxTokens`); its answer streams through
 * as the upstream sends it, and once the response is over the reservation is settled with
 * what it really cost ({@link tokensUsed}): the unused part goes back, an excess is debt the
 * key's next requests wait out. The client's `Authorization` is passed to the upstream.
 *
 * @example
 * ```ts
 * const { app } = llmProxy({ upstream: 'https://api.openai.com', limits: { tokensPerMinute: 30_000 } })
 * app.listen(8080)
 * ```
 */
export function llmProxy(options: ProxyOptions): LlmProxy {
  const limits = { requestsPerMinute: 60, tokensPerMinute: 10_000, tokensPerDay: 100_000 }
  Object.assign(limits, options.limits)
  const defaultMaxTokens = options.defaultMaxTokens ?? 1000
  const completions = new URL('/v1/chat/completions', options.upstream)
  const tallies = new WeakMap<Request, Tally>()
  const tallyOf = (req: Request) => tallies.get(req)!
  const charge = (tokens: number) => ({ rpm: 1, tpm: tokens, tpd: tokens })

  const limiter = rateLimit({
    policies: [
      { name: 'rpm', limit: limits.requestsPerMinute, window: '1m' },
      { name: 'tpm', algorithm: 'token-bucket', limit: limits.tokensPerMinute, window: '1m' },
      { name: 'tpd', limit: limits.tokensPerDay, window: '1d', slots: 24 },
    ],
    key: (req) => budgetKey(apiKeyOf(req)!),
    cost: (req) => charge(tallyOf(req).estimate),
    // Once the response is over, finished or abandoned (`writableFinished` tells which).
    settle: (req, res) => charge(tokensUsed(tallyOf(req), res.writableFinished)),
    // Refused: OpenAI's error body, naming the policy that refused and when to retry.
    message: (req, res) => {
      const decided = req.rateLimit!
      const policy = decided.policy as keyof typeof POLICY_NAMES
      const requested = policy === 'rpm' ? 1 : tallyOf(req).estimate
      const seconds = res.getHeader('retry-after')
      return openAiError(
        `Rate limit reached on ${POLICY_NAMES[policy]}: Limit ${decided.limit}, Remaining ${decided.remaining}, Requested ${requested}. Please try again in ${seconds}s.`,
        policy === 'rpm' ? 'requests' : 'tokens',
        'rate_limit_exceeded',
      )
    },
    ...(options.store === undefined ? {} : { store: options.store }),
  })

  function authenticate(req: Request, res: Response, next: NextFunction): void {
    if (apiKeyOf(req) === undefined) {
      res
        .status(401)
        .json(openAiError('Missing bearer authentication in header', 'invalid_request_error'))
      return
    }
    next()
  }

  function estimate(req: Request, res: Response, next: NextFunction): void {
    const problem = invalid(req.body)
    if (problem !== undefined) {
      res.status(400).json(openAiError(problem, 'invalid_request_error'))
      return
    }
    const counted = tally(req.body as ChatRequest, defaultMaxTokens)
    const most = Math.min(limits.tokensPerMinute, limits.tokensPerDay)
    // The limiter would refuse it forever, with a Retry-After of its window. OpenAI answers
    // 429 here, which its own client retries in vain: 400 says to change the request.
    if (counted.estimate > most) {
      const message = `Request too large: Limit ${most} tokens, Requested ${counted.estimate}. Lower max_tokens or shorten the prompt.`
      res.status(400).json(openAiError(message, 'invalid_request_error', 'request_too_large'))
      return
    }
    tallies.set(req, counted)
    next()
  }

  async function complete(req: Request, res: Response): Promise<void> {
    const request = req.body as ChatRequest
    const counted = tallyOf(req)
    // The client leaving cancels the upstream request, so the upstream stops generating.
    const left = new AbortController()
    res.once('close', () => left.abort())
    // The upstream reports usage at a stream's end only when asked to.
    const body = request.stream
      ? { ...request, stream_options: { ...request.stream_options, include_usage: true } }
      : request
    let upstream: globalThis.Response
    try {
      upstream = await fetch(completions, {
        method: 'POST',
        headers: { authorization: req.get('authorization')!, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: left.signal,
      })
    } catch (error) {
      if (left.signal.aborted) return
      counted.failed = true
      res.status(502).json(openAiError(`The upstream failed: ${String(error)}`, 'upstream_error'))
      return
    }
    try {
      if (!upstream.ok || upstream.body === null) {
        counted.failed = true
        const type = upstream.headers.get('content-type') ?? 'application/json'
        res
          .status(upstream.status)
          .type(type)
          .send(await upstream.text())
      } else if (request.stream) {
        const wantsUsage = request.stream_options?.include_usage === true
        await relay(upstream.body, res, counted, wantsUsage, left.signal)
      } else {
        const answer = (await upstream.json()) as { usage?: Usage }
        counted.usage = answer.usage
        res.json(answer)
      }
    } catch (error) {
      if (left.signal.aborted) return
      if (!res.headersSent) {
        res.status(502).json(openAiError(`The upstream failed: ${String(error)}`, 'upstream_error'))
        return
      }
      // Broken off mid-stream: say so as OpenAI does in a stream; what came is charged.
      res.end(`data: ${JSON.stringify(openAiError(String(error), 'upstream_error'))}\n\n`)
    }
  }

  const app = express()
  app.post(
    '/v1/chat/completions',
    authenticate,
    express.json({ limit: '1mb' }),
    estimate,
    limiter,
    complete,
  )
  return { app, limiter }
}

/**
 * Streams the upstream's Server-Sent Events to the client as they arrive, counting content
 * chunks and keeping the final chunk's `usage`; that chunk reaches the client only if it
 * asked for it (`stream_options.include_usage`), as it would from the upstream itself.
 */
async function relay(
  events: ReadableStream<Uint8Array>,
  res: Response,
  counted: Tally,
  clientWantsUsage: boolean,
  left: AbortSignal,
): Promise<void> {
  res
    .status(200)
    .set({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
  res.flushHeaders()
  const parsed = events
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
  for await (const { data } of parsed) {
    if (data !== '[DONE]') {
      const chunk = JSON.parse(data) as CompletionChunk
      for (const choice of chunk.choices ?? []) if (choice.delta?.content) counted.streamed++
      if (chunk.usage) {
        counted.usage = chunk.usage
        if (!clientWantsUsage && chunk.choices?.length === 0) continue
      }
    }
    // Backpressure: a slow client slows the upstream read instead of filling memory.
    if (!res.write(`data: ${data}\n\n`)) await once(res, 'drain', { signal: left })
  }
  res.end()
}

/** A proxy listening on a port. */
export interface RunningProxy extends LlmProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  close(): Promise<void>
}

/**
 * Serves {@link llmProxy} on `port` (default: any free one) on the loopback interface.
 *
 * @example
 * ```ts
 * const proxy = await startProxy({ upstream: 'https://api.openai.com', port: 8080 })
 * ```
 */
export async function startProxy(options: ProxyOptions & { port?: number }): Promise<RunningProxy> {
  const proxy = llmProxy(options)
  const server: Server = proxy.app.listen(options.port ?? 0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    ...proxy,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
