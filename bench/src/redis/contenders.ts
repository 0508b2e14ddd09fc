import { keyedLimiter } from '@sluice/keyed'
import { compilePolicy } from '@sluice/keyed/store'
import { redisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis'
import { RateLimiterRedis } from 'rate-limiter-flexible'

/** One decision: resolves true when admitted. */
export type Decide = (key: string) => Promise<boolean>

/** A contender of the Redis comparison, on its own connection. */
export interface RedisContender {
  readonly id: string
  readonly label: string
  readonly kind: 'floor' | 'sluice' | 'peer'
  /** For sluice: which algorithm, to pair it with the targets. */
  readonly algorithm?: 'fixed-window' | 'sliding-window' | 'token-bucket'
  /** Makes the decision function, with its connection open and scripts loaded. */
  open(port: number): Promise<{ decide: Decide; close(): Promise<void> }>
}

/**
 * The rate of every contender: a billion per hour per key, which no run reaches, so every
 * decision is an admitted one (the common case, and the one every peer measures alike).
 */
export const BENCH_RATE = { limit: 1_000_000_000, windowMs: 3_600_000 } as const

async function connect(port: number): Promise<Redis> {
  const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false })
  client.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve)
    client.once('end', () => reject(new Error('connection ended')))
  })
  return client
}

const RETURN_ONE = 'return 1'

function sluice(
  algorithm: 'fixed-window' | 'sliding-window' | 'token-bucket',
  label: string,
): RedisContender {
  return {
    id: `sluice-${algorithm}`,
    label: `sluice redisStore · ${label}`,
    kind: 'sluice',
    algorithm,
    async open(port) {
      const client = await connect(port)
      const store = redisStore({ client, prefix: 'sluice:', onError: 'deny' })
      const policy = compilePolicy(
        { algorithm, limit: BENCH_RATE.limit, window: BENCH_RATE.windowMs },
        'bench',
      )
      const policies = [policy]
      return {
        decide: async (key) => (await store.take(key, policies, 1)).allowed,
        close: async () => {
          await client.quit()
        },
      }
    },
  }
}

/**
 * `keyedLimiter.consume` on the Redis store (issue 26): the programmatic API, token bucket,
 * against rate-limiter-flexible's `consume` in the same run.
 */
const keyedConsume: RedisContender = {
  id: 'sluice-keyed-consume',
  label: 'sluice keyedLimiter.consume · token bucket',
  kind: 'sluice',
  async open(port) {
    const client = await connect(port)
    const limiter = keyedLimiter({
      name: 'bench-keyed',
      algorithm: 'token-bucket',
      limit: BENCH_RATE.limit,
      window: BENCH_RATE.windowMs,
      store: redisStore({ client, prefix: 'sluice-keyed:', onError: 'deny' }),
    })
    return {
      decide: async (key) => (await limiter.consume(key)).allowed,
      close: async () => {
        await client.quit()
      },
    }
  },
}

/** Every contender, the floor first. */
export const REDIS_CONTENDERS: readonly RedisContender[] = [
  {
    id: 'floor',
    label: 'floor: ioredis EVALSHA of `return 1`',
    kind: 'floor',
    async open(port) {
      const client = await connect(port)
      const sha = String(await client.script('LOAD', RETURN_ONE))
      return {
        decide: async (key) => (await client.call('EVALSHA', sha, '1', key)) === 1,
        close: async () => {
          await client.quit()
        },
      }
    },
  },
  sluice('fixed-window', 'fixed window'),
  sluice('sliding-window', 'sliding window (10 slots)'),
  sluice('token-bucket', 'token bucket'),
  keyedConsume,
  {
    id: 'rate-limiter-flexible',
    label: 'rate-limiter-flexible RateLimiterRedis.consume',
    kind: 'peer',
    async open(port) {
      const client = await connect(port)
      const limiter = new RateLimiterRedis({
        storeClient: client,
        points: BENCH_RATE.limit,
        duration: BENCH_RATE.windowMs / 1000,
        keyPrefix: 'rlflx',
      })
      return {
        decide: async (key) => {
          await limiter.consume(key, 1)
          return true
        },
        close: async () => {
          await client.quit()
        },
      }
    },
  },
  {
    id: 'rate-limit-redis',
    label: 'rate-limit-redis RedisStore.increment (express-rate-limit)',
    kind: 'peer',
    async open(port) {
      const client = await connect(port)
      const store = new RateLimitRedisStore({
        sendCommand: (command: string, ...args: string[]) =>
          client.call(command, ...args) as Promise<never>,
        prefix: 'rl:',
      })
      // express-rate-limit calls init with its options; the store needs only windowMs.
      store.init({ windowMs: BENCH_RATE.windowMs } as Parameters<typeof store.init>[0])
      return {
        // express-rate-limit admits while the count is within the limit.
        decide: async (key) => (await store.increment(key)).totalHits <= BENCH_RATE.limit,
        close: async () => {
          await client.quit()
        },
      }
    },
  },
]
