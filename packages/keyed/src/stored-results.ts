import type { Policy, PolicyResult, TakeResult } from './store'
import type { StoredResult } from './stored-state'

/**
 * One policy's result as JSON carries it from where `StoredState` decided (a Durable
 * Object) to the store's client: JSON has no Infinity, so a wait of `null` means never.
 */
export interface WireResult {
  readonly allowed: boolean
  readonly remaining: number
  readonly resetMs: number | null
  readonly retryAfterMs: number | null
  readonly lease?: { readonly id: string; readonly permits: number }
  readonly receipt?: number
  readonly blocked?: true
}

/** A decision as JSON carries it: the answer to a take, and (`allowed` unused) to a get or force. */
export interface WireTake {
  readonly allowed: boolean
  readonly results: readonly WireResult[]
}

const never = (ms: number) => (Number.isFinite(ms) ? ms : null)
const ms = (wire: number | null) => wire ?? Number.POSITIVE_INFINITY

/**
 * A decision of `StoredState` as JSON can carry it (see {@link WireResult}); the other end
 * reads it with {@link fromWire}.
 *
 * @example
 * ```ts
 * return Response.json(toWire(state.take(cost, leaseTtlMs, lease)))
 * ```
 */
export function toWire(taken: {
  readonly allowed: boolean
  readonly results: readonly StoredResult[]
}): WireTake {
  return {
    allowed: taken.allowed,
    results: taken.results.map((result) => ({
      ...result,
      resetMs: never(result.resetMs),
      retryAfterMs: never(result.retryAfterMs),
    })),
  }
}

/**
 * Reads a decision that {@link toWire} wrote, for the `policies` it was asked about;
 * undefined when the reply is not one (the store reports it as its backend's failure).
 *
 * @example
 * ```ts
 * const taken = fromWire(JSON.parse(text), policies)
 * if (taken === undefined) throw new MyStoreError(`unexpected answer ${text}`)
 * ```
 */
export function fromWire(reply: unknown, policies: readonly Policy[]): TakeResult | undefined {
  const take = reply as WireTake
  if (
    typeof take !== 'object' ||
    take === null ||
    !Array.isArray(take.results) ||
    take.results.length !== policies.length
  ) {
    return undefined
  }
  return {
    allowed: take.allowed === true,
    results: withPolicies(
      take.results.map((result) => ({
        ...result,
        resetMs: ms(result.resetMs),
        retryAfterMs: ms(result.retryAfterMs),
      })),
      policies,
    ),
  }
}

/**
 * `StoredState`'s results as the Store protocol answers them: each with its policy and
 * limit, in order.
 *
 * @example
 * ```ts
 * const taken = state.take(cost, leaseTtlMs)
 * return { allowed: taken.allowed, results: withPolicies(taken.results, policies) }
 * ```
 */
export function withPolicies(
  results: readonly StoredResult[],
  policies: readonly Policy[],
): PolicyResult[] {
  return results.map((result, i) => {
    const policy = policies[i]!
    const answer: { -readonly [K in keyof PolicyResult]: PolicyResult[K] } = {
      policy,
      allowed: result.allowed,
      limit: policy.limit,
      remaining: result.remaining,
      resetMs: result.resetMs,
      retryAfterMs: result.retryAfterMs,
    }
    if (result.lease !== undefined) answer.lease = result.lease
    if (result.receipt !== undefined) answer.receipt = result.receipt
    if (result.blocked === true) answer.blocked = true
    return answer
  })
}
