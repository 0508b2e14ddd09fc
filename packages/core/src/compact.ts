import type { CompactRateLimiter, Limiter } from './types'

/**
 * Whether a limiter keeps its whole state in one number (`saveState`/`loadState`):
 * token bucket, leaky bucket and fixed window do.
 *
 * @example
 * ```ts
 * const policy = tokenBucket({ limit: 10, window: '1s' })
 * if (isCompact(policy)) {
 *   policy.loadState(states.get(key) ?? policy.freshState)
 *   const allowed = policy.tryAcquire()
 *   states.set(key, policy.saveState())
 * }
 * ```
 */
export function isCompact(limiter: Limiter): limiter is CompactRateLimiter {
  const candidate = limiter as Partial<CompactRateLimiter>
  return typeof candidate.saveState === 'function' && typeof candidate.loadState === 'function'
}
