/** The stable codes a {@link RateLimitError} carries. */
export type RateLimitErrorCode =
  | 'ERR_SLUICE_LIMITED'
  | 'ERR_SLUICE_QUEUE_FULL'
  | 'ERR_SLUICE_TIMEOUT'

/** What a {@link RateLimitError} is built from. */
export interface RateLimitErrorOptions {
  /** The limiter's `name`. */
  limiter: string
  /**
   * Milliseconds until the request could pass: `Infinity` when it never can, `0` when
   * the limiter cannot estimate it (a bulkhead has no time axis). Default `0`.
   */
  retryAfterMs?: number
  /** Replaces the default message. */
  message?: string
  /** The partition (priority) of a concurrency limiter that refused, when it has priorities. */
  partition?: string
}

const DEFAULT_MESSAGES: Record<RateLimitErrorCode, string> = {
  ERR_SLUICE_LIMITED: 'rate limit exceeded',
  ERR_SLUICE_QUEUE_FULL: 'wait queue is full',
  ERR_SLUICE_TIMEOUT: 'permits not available within the timeout',
}

/**
 * Thrown or rejected when a limiter refuses: `ERR_SLUICE_LIMITED` (over the limit, or a
 * request larger than the limiter can ever hold), `ERR_SLUICE_QUEUE_FULL` (no room to
 * wait) or `ERR_SLUICE_TIMEOUT` (the permits cannot be had within the timeout).
 *
 * @example
 * ```ts
 * try {
 *   await limiter.acquire(1, { timeout: '2s' })
 * } catch (error) {
 *   if (error instanceof RateLimitError && error.code === 'ERR_SLUICE_TIMEOUT') {
 *     console.log(`${error.limiter}: retry in ${error.retryAfterMs} ms`)
 *   }
 * }
 * ```
 */
export class RateLimitError extends Error {
  override readonly name = 'RateLimitError'
  readonly code: RateLimitErrorCode
  /** Milliseconds until a retry could pass; `Infinity` = never, `0` = unknown or now. */
  readonly retryAfterMs: number
  /** The refusing limiter's `name`. */
  readonly limiter: string
  /**
   * For a concurrency limiter: the partition that refused, named after the request's
   * priority (`'sheddable'`, `'critical'`, `'7'`).
   */
  readonly partition?: string

  constructor(code: RateLimitErrorCode, options: RateLimitErrorOptions) {
    const retryAfterMs = options.retryAfterMs ?? 0
    super(
      options.message ?? `${options.limiter}: ${DEFAULT_MESSAGES[code]}${retryHint(retryAfterMs)}`,
    )
    this.code = code
    this.retryAfterMs = retryAfterMs
    this.limiter = options.limiter
    if (options.partition !== undefined) this.partition = options.partition
  }
}

function retryHint(retryAfterMs: number): string {
  if (retryAfterMs === Number.POSITIVE_INFINITY) return ' (the request can never be granted)'
  return retryAfterMs > 0 ? ` (retry in ${Math.ceil(retryAfterMs)} ms)` : ''
}

/** The rejection for a request larger than the limiter can ever hold. */
export function neverError(name: string, permits: number, capacity: number): RateLimitError {
  return new RateLimitError('ERR_SLUICE_LIMITED', {
    limiter: name,
    retryAfterMs: Number.POSITIVE_INFINITY,
    message: `${name}: ${permits} permits can never be granted, the limiter holds at most ${capacity}`,
  })
}
