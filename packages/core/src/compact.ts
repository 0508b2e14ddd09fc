import type { CompactRateLimiter, Limiter, PortableRateLimiter } from './types'

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

/**
 * Whether a limiter's state can be exported and imported (`exportState`/`importState`),
 * as a store needs that keeps limiters in storage: every time-based limiter can.
 *
 * @example
 * ```ts
 * const limiter = createLimiter(spec, clock)
 * if (isPortable(limiter)) limiter.importState(await storage.get(key) ?? limiter.exportState())
 * ```
 */
export function isPortable(limiter: Limiter): limiter is PortableRateLimiter {
  const candidate = limiter as Partial<PortableRateLimiter>
  return typeof candidate.exportState === 'function' && typeof candidate.importState === 'function'
}
