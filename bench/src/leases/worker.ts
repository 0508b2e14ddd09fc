/**
 * One application process of the leases bench's multi-process rows: offers `perWindow`
 * decisions per window on one key, paced in 5 ms ticks, from the time its parent writes to
 * stdin (once it printed `ready`) for `windows` windows, through one contender (sluice's
 * `redisStore` with the default `lease`, or a peer), and prints `RESULT <json>`: what it
 * admitted per millisecond (of the moment its answer came), and how many of its admissions
 * it could not place (their call and answer fell in different measuring units: which one
 * Redis counted them in is not known here).
 *
 * Args: one JSON {@link WorkerArgs}.
 */
import type { LeasedStore } from '@sluice/keyed'
import { compilePolicy } from '@sluice/keyed/store'
import { redisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis'
import { RateLimiterRedis } from 'rate-limiter-flexible'

export type Algorithm = 'fixed-window' | 'sliding-window' | 'token-bucket'
export type Contender = 'sluice' | 'rate-limiter-flexible' | 'rate-limit-redis'

export interface WorkerArgs {
  readonly port: number
  readonly prefix: string
  readonly contender: Contender
  readonly algorithm: Algorithm
  readonly limit: number
  readonly windowMs: number
  /** Decisions this process offers per window. */
  readonly perWindow: number
  readonly windows: number
  /** An admission whose call and answer fall in different units of this many ms is not placed. */
  readonly unitMs: number
}

export interface WorkerResult {
  readonly decisions: number
  readonly admitted: number
  /** [ms since the start, admissions answered in it], for the admissions placed. */
  readonly at: readonly (readonly [number, number])[]
  readonly unplaced: number
  readonly errors: number
  /** Milliseconds the offered load took (more than `windows` windows when the process fell behind). */
  readonly elapsedMs: number
}

const TICK = 5

async function main(args: WorkerArgs): Promise<void> {
  const client = new Redis({ host: '127.0.0.1', port: args.port, enableOfflineQueue: false })
  client.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve)
    client.once('end', () => reject(new Error('connection ended')))
  })
  const { decide, close } = await open(client, args)
  // One decision before the start: scripts loaded, the key's first (exact) decision made.
  await decide()
  process.stdout.write('ready\n')
  const startAt = await startTime()
  const W = args.windowMs
  const perTick = Math.max(1, Math.round((args.perWindow * TICK) / W))
  const at = new Map<number, number>()
  let decisions = 0
  let admitted = 0
  let unplaced = 0
  let errors = 0
  await sleep(startAt - Date.now())
  const end = startAt + args.windows * W
  let next = Date.now()
  while (Date.now() < end) {
    const takes: Promise<void>[] = []
    for (let i = 0; i < perTick; i++) {
      const called = Date.now()
      takes.push(
        decide().then(
          (allowed) => {
            decisions++
            if (!allowed) return
            admitted++
            const answered = Date.now()
            if (Math.floor(called / args.unitMs) !== Math.floor(answered / args.unitMs)) {
              unplaced++
              return
            }
            const ms = answered - startAt
            at.set(ms, (at.get(ms) ?? 0) + 1)
          },
          () => {
            decisions++
            errors++
          },
        ),
      )
    }
    await Promise.all(takes)
    next += TICK
    await sleep(next - Date.now())
  }
  const elapsedMs = Date.now() - startAt
  await close()
  const result: WorkerResult = {
    decisions,
    admitted,
    at: [...at].sort((a, b) => a[0] - b[0]),
    unplaced,
    errors,
    elapsedMs,
  }
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
  await client.quit()
}

async function open(
  client: Redis,
  args: WorkerArgs,
): Promise<{ decide: () => Promise<boolean>; close: () => Promise<void> }> {
  const seconds = args.windowMs / 1000
  switch (args.contender) {
    case 'sluice': {
      const store = redisStore({ client, prefix: args.prefix, lease: {} })
      const policy = [
        compilePolicy(
          { algorithm: args.algorithm, limit: args.limit, window: args.windowMs },
          'lease-bench',
        ),
      ]
      return {
        decide: async () => (await store.take('hot', policy, 1)).allowed,
        // Unspent permits go back before the client closes.
        close: () => (store as unknown as LeasedStore).flush(),
      }
    }
    case 'rate-limiter-flexible': {
      const limiter = new RateLimiterRedis({
        storeClient: client,
        points: args.limit,
        duration: seconds,
        keyPrefix: args.prefix,
      })
      return {
        decide: () =>
          limiter.consume('hot', 1).then(
            () => true,
            (refusal: unknown) => {
              if (refusal instanceof Error) throw refusal
              return false
            },
          ),
        close: async () => {},
      }
    }
    case 'rate-limit-redis': {
      const store = new RateLimitRedisStore({
        sendCommand: (command: string, ...rest: string[]) =>
          client.call(command, ...rest) as Promise<never>,
        prefix: args.prefix,
      })
      await store.init({ windowMs: args.windowMs } as Parameters<typeof store.init>[0])
      return {
        decide: async () => (await store.increment('hot')).totalHits <= args.limit,
        close: async () => {},
      }
    }
  }
}

/** The start time the parent writes on stdin, however it arrives in chunks. */
function startTime(): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffered = ''
    process.stdin.setEncoding('utf8')
    process.stdin.on('data', (chunk: string) => {
      buffered += chunk
      const end = buffered.indexOf('\n')
      if (end === -1) return
      // Nothing more comes: the pipe must not keep the process alive at its end.
      process.stdin.destroy()
      resolve(Number(buffered.slice(0, end).trim()))
    })
    process.stdin.once('end', () => reject(new Error('stdin ended before the start time came')))
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

main(JSON.parse(process.argv[2]!) as WorkerArgs).catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  )
  process.exit(1)
})
