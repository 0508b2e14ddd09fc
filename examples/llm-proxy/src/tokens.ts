/**
 * How many tokens a chat completion costs: estimated from its request before it runs,
 * counted from its answer afterwards.
 */

/** The token counts an OpenAI-style upstream reports (`usage`). */
export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

/** One message of a chat completion request: text, or parts of which the text ones count. */
export interface ChatMessage {
  readonly role: string
  readonly content?: string | readonly { readonly type: string; readonly text?: string }[] | null
}

/** The fields of a chat completion request this proxy reads; the rest is passed on as is. */
export interface ChatRequest {
  readonly model?: string
  readonly messages: readonly ChatMessage[]
  readonly stream?: boolean
  readonly stream_options?: { readonly include_usage?: boolean }
  readonly max_tokens?: number
  readonly max_completion_tokens?: number
  /** Answers to generate; each may take up to the completion limit. Default 1. */
  readonly n?: number
}

/**
 * Characters per token in the prompt estimate: OpenAI's rule of thumb for English text. The
 * estimate only decides admission; what the upstream reports is what is charged.
 */
const CHARS_PER_TOKEN = 4

/**
 * Estimated prompt tokens: the text of every message, at {@link CHARS_PER_TOKEN} characters a
 * token, rounded up.
 *
 * @example
 * ```ts
 * promptTokens([{ role: 'user', content: 'x'.repeat(100) }]) // 25
 * ```
 */
export function promptTokens(messages: readonly ChatMessage[]): number {
  let chars = 0
  for (const { content } of messages) {
    if (typeof content === 'string') chars += content.length
    else if (Array.isArray(content)) {
      for (const part of content) if (typeof part.text === 'string') chars += part.text.length
    }
  }
  return Math.ceil(chars / CHARS_PER_TOKEN)
}

/**
 * The most tokens a request's answers may take: its `max_completion_tokens` (or the older
 * `max_tokens`), or `fallback` when it sets neither, times `n`.
 *
 * @example
 * ```ts
 * completionBudget({ messages: [], max_tokens: 200, n: 2 }, 1000) // 400
 * ```
 */
export function completionBudget(request: ChatRequest, fallback: number): number {
  const most = request.max_completion_tokens ?? request.max_tokens ?? fallback
  return most * (request.n ?? 1)
}

/** What the proxy knows of one request's tokens, from its estimate to the last chunk. */
export interface Tally {
  /** The prompt's estimated tokens. */
  readonly prompt: number
  /** What the request reserved: the prompt's estimate plus its completion budget. */
  readonly estimate: number
  /** Chunks with content received from the upstream so far: it streams about a token each. */
  streamed: number
  /** The upstream's own count, once its usage chunk (or its JSON answer) has arrived. */
  usage: Usage | undefined
  /** The upstream refused the request or could not be reached: it generated nothing. */
  failed: boolean
}

/**
 * A new tally for `request`, before anything is sent upstream.
 *
 * @example
 * ```ts
 * tally({ messages: [{ role: 'user', content: 'x'.repeat(100) }] }, 1000).estimate // 1025
 * ```
 */
export function tally(request: ChatRequest, defaultMaxTokens: number): Tally {
  const prompt = promptTokens(request.messages)
  return {
    prompt,
    estimate: prompt + completionBudget(request, defaultMaxTokens),
    streamed: 0,
    usage: undefined,
    failed: false,
  }
}

/**
 * The tokens a request is charged once its response is over (`finished`: sent to its end;
 * otherwise its client left first):
 * 1. the upstream's `usage.total_tokens`, whenever it arrived;
 * 2. 0 if the upstream refused the request or could not be reached;
 * 3. the estimate if the client left before any content came (the upstream may have
 *    worked on the prompt already, and nothing says how far it got);
 * 4. otherwise the prompt's estimate plus one token per content chunk received.
 *
 * @example
 * ```ts
 * tokensUsed({ prompt: 25, estimate: 1025, streamed: 3, usage: undefined, failed: false }, false) // 28
 * ```
 */
export function tokensUsed(counted: Tally, finished: boolean): number {
  if (counted.usage !== undefined) return counted.usage.total_tokens
  if (counted.failed) return 0
  if (counted.streamed === 0 && !finished) return counted.estimate
  return counted.prompt + counted.streamed
}
