import { compilePolicy } from '@sluice/keyed/store'
import { redisStore } from '@sluice/redis'
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis'
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { type Summary, summarize } from '../stats'
import { BENCH_RATE } from './contenders'

/** What a library costs per decision in this process, its Redis client left out. */
export interface OverheadResult {
  readonly id: string
  readonly label: string
  /** CPU µs per decision over a bare `await` of the same instant client, per round. */
  readonly us: Summary
}

// Replies as Redis would give them for an admitted decision: the one-policy scripts'
// [admitted, available, reset µs, retry µs, receipt, blocked], a peer's [count, ttl].
const SLUICE_REPLY = [1, 999_999_999, 3_600, 0, 478, 0]

interface Library {
  readonly id: string
  readonly label: string
  /** A decision on a client that answers at once, and that client's bare call. */
  make(): { decide: (key: string) => Promise<unknown>; bare: () => Promise<unknown> }
}

type Algorithm = 'fixed-window' | 'sliding-window' | 'token-bucket'

function sluice(algorithm: Algorithm): Library {
  return {
    id: `sluice-${algorithm}`,
    label: `sluice redisStore.take · ${algorithm}`,
    make() {
      const send = () => Promise.resolve(SLUICE_REPLY)
      const store = redisStore({ client: send, onError: 'deny' })
      const policies = [
        compilePolicy({ algorithm, limit: BENCH_RATE.limit, window: BENCH_RATE.windowMs }, 'bench'),
      ]
      return { decide: (key) => store.take(key, policies, 1), bare: send }
    },
  }
}

const LIBRARIES: readonly Library[] = [
  sluice('fixed-window'),
  sluice('sliding-window'),
  sluice('token-bucket'),
  {
    id: 'rate-limiter-flexible',
    label: 'rate-limiter-flexible RateLimiterRedis.consume',
    make() {
      const reply = () => Promise.resolve([1, 3_600_000])
      // The part of an ioredis client it uses: defineCommand, then the defined command.
      const client: Record<string, unknown> = {
        status: 'ready',
        defineCommand(name: string) {
          client[name] = reply
        },
      }
      const limiter = new RateLimiterRedis({
        storeClient: client,
        points: BENCH_RATE.limit,
        duration: BENCH_RATE.windowMs / 1000,
      })
      return { decide: (key) => limiter.consume(key, 1), bare: reply }
    },
  },
  {
    id: 'rate-limit-redis',
    label: 'rate-limit-redis RedisStore.increment',
    make() {
      const reply = () => Promise.resolve([1, 3_600_000])
      const store = new RateLimitRedisStore({
        sendCommand: (command: string) =>
          (command === 'SCRIPT' ? Promise.resolve('sha') : reply()) as Promise<never>,
      })
      store.init({ windowMs: BENCH_RATE.windowMs } as Parameters<typeof store.init>[0])
      return { decide: (key) => store.increment(key), bare: reply }
    },
  },
]

async function cpuPerCall(call: () => Promise<unknown>, calls: number): Promise<number> {
  const before = process.cpuUsage()
  for (let i = 0; i < calls; i++) await call()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / calls
}

/**
 * Each library's own CPU per decision: decisions on a client that answers at once (no
 * socket, no Redis), minus a bare await of that client, rounds interleaved. This is what
 * a library adds to its Redis client, which process-wide CPU (a syscall per request)
 * buries in noise.
 */
export async function measureOverhead(rounds: number, calls = 200_000): Promise<OverheadResult[]> {
  const made = LIBRARIES.map((library) => library.make())
  const samples = LIBRARIES.map(() => [] as number[])
  for (const [i, { decide, bare }] of made.entries()) {
    await cpuPerCall(() => decide('203.0.113.7'), calls / 4)
    await cpuPerCall(bare, calls / 4)
    samples[i]!.length = 0
  }
  for (let round = 0; round < rounds; round++) {
    for (const [i, { decide, bare }] of made.entries()) {
      const library = await cpuPerCall(() => decide('203.0.113.7'), calls)
      samples[i]!.push(library - (await cpuPerCall(bare, calls)))
    }
  }
  return LIBRARIES.map((library, i) => ({
    id: library.id,
    label: library.label,
    us: summarize(samples[i]!),
  }))
}
