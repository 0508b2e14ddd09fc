import { describe, expect, it } from 'vitest'
import { RateLimitError } from './errors'

describe('RateLimitError', () => {
  it('carries code, limiter and retryAfterMs, and is an Error', () => {
    const error = new RateLimitError('ERR_SLUICE_LIMITED', { limiter: 'api', retryAfterMs: 1500 })
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('RateLimitError')
    expect(error.code).toBe('ERR_SLUICE_LIMITED')
    expect(error.limiter).toBe('api')
    expect(error.retryAfterMs).toBe(1500)
    expect(error.message).toBe('api: rate limit exceeded (retry in 1500 ms)')
  })

  it.each([
    ['ERR_SLUICE_QUEUE_FULL', undefined, 'jobs: wait queue is full', 0],
    [
      'ERR_SLUICE_TIMEOUT',
      10.2,
      'jobs: permits not available within the timeout (retry in 11 ms)',
      10.2,
    ],
    [
      'ERR_SLUICE_LIMITED',
      Number.POSITIVE_INFINITY,
      'jobs: rate limit exceeded (the request can never be granted)',
      Number.POSITIVE_INFINITY,
    ],
  ] as const)('%s with retryAfterMs %s reads "%s"', (code, retryAfterMs, message, stored) => {
    const error = new RateLimitError(code, {
      limiter: 'jobs',
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    })
    expect(error.message).toBe(message)
    expect(error.retryAfterMs).toBe(stored)
  })

  it('takes a custom message', () => {
    const error = new RateLimitError('ERR_SLUICE_TIMEOUT', { limiter: 'x', message: 'custom' })
    expect(error.message).toBe('custom')
  })
})
