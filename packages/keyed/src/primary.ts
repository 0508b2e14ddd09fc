import type { PolicyResult } from './store'

/**
 * Picks the result a single-valued answer shows (a single-valued header, `req.rateLimit`,
 * a keyed limiter's overall fields): when rejected, the rejecting policy with the longest
 * wait; when admitted, the one with the fewest permits left. Ties go to the earlier policy.
 *
 * @example
 * ```ts
 * const shown = taken.results[primaryIndex(taken.results, taken.allowed)]
 * ```
 */
export function primaryIndex(results: readonly PolicyResult[], allowed: boolean): number {
  let best = 0
  for (let i = 1; i < results.length; i++) {
    const candidate = results[i]!
    const current = results[best]!
    if (allowed) {
      if (candidate.remaining < current.remaining) best = i
    } else if (
      !candidate.allowed &&
      (current.allowed || candidate.retryAfterMs > current.retryAfterMs)
    ) {
      best = i
    }
  }
  return best
}

/** The longest wait among the refusing policies: when all of them would admit. */
export function longestWait(results: readonly PolicyResult[]): number {
  let wait = 0
  for (const r of results) if (!r.allowed && r.retryAfterMs > wait) wait = r.retryAfterMs
  return wait
}
