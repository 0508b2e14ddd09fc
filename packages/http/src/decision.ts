import type { Cost, PolicyResult } from '@sluice/keyed/store'

/**
 * What a handler sees of a rate-limit decision (`req.rateLimit`, `ctx.state.rateLimit`,
 * `c.get('rateLimit')`). With several policies the numbers are those of the tightest one:
 * the rejecting policy with the longest wait, or else the one with the fewest permits left.
 *
 * @example
 * ```ts
 * app.get('/quota', (req, res) => {
 *   res.json({ left: req.rateLimit?.remaining, resetsInMs: req.rateLimit?.resetMs })
 * })
 * ```
 */
export interface RateLimitInfo {
  /** Whether the limits admit the request (in dry run: whether they would have). */
  readonly allowed: boolean
  /** False only in dry run: a refusal is reported but the request goes on. */
  readonly enforced: boolean
  /** Quota per window of the policy shown. */
  readonly limit: number
  /** Permits left after this request (never negative). */
  readonly remaining: number
  /**
   * Milliseconds until more quota becomes available under the policy shown (draft -10's
   * `t`): 0 while it is full.
   */
  readonly resetMs: number
  /** The budget this request was counted against. */
  readonly key: string
  /** The name of the policy shown. */
  readonly policy: string
}

/**
 * What a handler sees of the bulkhead slot it runs in (`req.bulkhead`,
 * `ctx.state.bulkhead`, `c.get('bulkhead')`, `request.bulkhead`), with a signal to stop
 * early: the slot stays taken until the handler's work is over, whether or not its client
 * is still there.
 *
 * @example
 * ```ts
 * app.get('/report', bulkhead({ max: 4 }), async (req, res) => {
 *   const rows = await db.query(sql, { signal: req.bulkhead?.signal })
 *   res.json(rows)
 * })
 * ```
 */
export interface BulkheadInfo {
  /** The bulkhead this request holds a slot of (per key; `'global'` by default). */
  readonly key: string
  /** The bulkhead's policy name. */
  readonly policy: string
  /** Requests it lets in at once. */
  readonly limit: number
  /** Slots left when this request took its own. */
  readonly remaining: number
  /**
   * Aborts when the work is no longer wanted: the client went away (reason: an
   * `AbortError`), or `holdTimeout` passed (a `TimeoutError`; the response is destroyed).
   */
  readonly signal: AbortSignal
}

/**
 * The full outcome of checking one request, as the engines hand it to an adapter: the
 * handler-facing numbers plus what the adapter needs to answer and to refund.
 *
 * @example
 * ```ts
 * const outcome = await engine.admit(req, res)
 * const decision = outcome.decision
 * if (decision && !decision.allowed) console.log(`retry in ${decision.retryAfterMs} ms`)
 * ```
 */
export interface Decision extends RateLimitInfo {
  /** 0 when allowed; otherwise milliseconds until it could pass (`Infinity`: never). */
  readonly retryAfterMs: number
  /** Permits this request took (or asked for): with a cost per policy, their sum. */
  readonly cost: number
  /** What each policy was charged: one number for all, or one per policy. */
  readonly charged: Cost
  /** One entry per policy, in the order configured. */
  readonly results: readonly PolicyResult[]
  /** A bulkhead with priorities: the request's partition (its priority), which refused it if it was refused. */
  readonly partition?: string
}

/** The result a single-valued header and `req.rateLimit` show: defined once, in keyed. */
export { primaryIndex } from '@sluice/keyed/store'
