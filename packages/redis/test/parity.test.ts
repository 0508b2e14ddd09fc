import { createLimiter, ManualClock, type RateLimiter } from '@sluice/core'
import type { Policy } from '@sluice/http'
import { expect, it } from 'vitest'
import { redisStore } from '../src/index'
import { connect, DAY, describeRedis, HOUR, policy, uniquePrefix } from './helpers'

// The same sequence of takes against a core limiter and against Redis must give the same
// decisions. The core limiter's ManualClock stands still at the current Unix time, so its
// windows align like Redis's; Redis's clock moves on by the milliseconds the test takes,
// which long windows make irrelevant to the decisions and a tolerance absorbs in the waits.
const DRIFT_MS = 5_000

const cases: [string, Policy, number[]][] = [
  [
    'token bucket, 5 per hour, capacity 3',
    policy.tokenBucket('p', { limit: 5, window: HOUR, capacity: 3 }),
    [1, 1, 1, 1, 2, 4],
  ],
  [
    'token bucket, 7 per hour',
    policy.tokenBucket('p', { limit: 7, window: HOUR }),
    [3, 3, 1, 1, 8],
  ],
  ['leaky bucket, 4 per hour', policy.leakyBucket('p', { limit: 4, window: HOUR }), [1, 1, 2]],
  [
    'warm-up, 6 per hour over an hour',
    policy.warmUp('p', { limit: 6, window: HOUR, warmUp: HOUR }),
    [2, 1, 1, 3, 6, 7],
  ],
  [
    'warm-up, capacity 2',
    policy.warmUp('p', { limit: 30, window: HOUR, capacity: 2, warmUp: 2 * HOUR }),
    [1, 2, 1, 3],
  ],
  [
    'warm-up, capacity 1',
    policy.warmUp('p', { limit: 30, window: HOUR, capacity: 1, warmUp: HOUR }),
    [1, 1],
  ],
  ['fixed window, 5 per day', policy.fixedWindow('p', { limit: 5, window: DAY }), [2, 2, 2, 1, 6]],
  [
    'sliding window, 5 per hour in 4 slots',
    policy.slidingWindow('p', { limit: 5, window: HOUR, slots: 4 }),
    [3, 1, 2, 1, 9],
  ],
]

const redis = connect()

describeRedis('the same decisions as @sluice/core', () => {
  it.each(cases)('%s', async (_, p, costs) => {
    const store = redisStore({ client: redis, prefix: uniquePrefix(), onError: 'deny' })
    const core = createLimiter(p.spec, new ManualClock(Date.now())) as RateLimiter
    for (const cost of costs) {
      const [result] = (await store.take('k', [p], cost)).results
      const allowed = core.tryAcquire(cost)
      const step = `cost ${cost}`
      expect([step, result!.allowed, result!.remaining]).toEqual([
        step,
        allowed,
        core.availablePermits(),
      ])
      const retry = allowed ? 0 : core.retryAfterMs(cost)
      if (retry === Number.POSITIVE_INFINITY) {
        expect(result!.retryAfterMs).toBe(Number.POSITIVE_INFINITY)
      } else {
        expect(Math.abs(result!.retryAfterMs - retry)).toBeLessThan(DRIFT_MS)
      }
      expect(Math.abs(result!.resetMs - core.resetMs())).toBeLessThan(DRIFT_MS)
    }
  })
})
