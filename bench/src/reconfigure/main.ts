/**
 * Live reconfiguration (issue 28): what a decision costs once its policy was reconfigured,
 * against the same policy never reconfigured, when nothing changes any more. Paired
 * samples, rounds interleaved (each round samples both sides, in alternating order), so a
 * noisy stretch of the machine hits both; the ratio is taken round by round.
 *
 * 1. `memoryStore.take`, one process: ns per decision, hot key and 10,000 keys, for a
 *    token bucket, a sliding window and a fixed window. "Reconfigured once": every key was
 *    written under another spec of the name (half the limit) and converted on its first
 *    take under this one, before sampling.
 * 2. `redisStore.take` on a redis-server the bench starts, one decision in flight, hot key:
 *    decisions/s, Redis's time inside the script per call and the commands the script
 *    runs per decision (`INFO commandstats`), same two sides.
 *
 * The limits are never reached, so every decision is an admitted one.
 *
 * Usage: pnpm bench:reconfigure [rounds, default 7] [Redis seconds per sample, default 2]
 */
import { memoryStore, type Policy, type RateAlgorithm, type Store } from '@sluice/keyed'
import { compilePolicy } from '@sluice/keyed/store'
import { redisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { startRedisServer } from '../../../packages/redis/test/redis-server'
import { pairedRatio, type Summary, summarize } from '../stats'

const ROUNDS = Number(process.argv[2] ?? 7)
const REDIS_SECONDS = Number(process.argv[3] ?? 2)
const RATE = { limit: 1_000_000_000, windowMs: 3_600_000 }
const ALGORITHMS: readonly RateAlgorithm[] = ['token-bucket', 'sliding-window', 'fixed-window']
const log = (line: string) => process.stdout.write(`${line}\n`)

function policyOf(algorithm: RateAlgorithm, limit: number): Policy {
  return compilePolicy({ name: 'api', algorithm, limit, window: RATE.windowMs }, 'bench')
}

function keysOf(count: number): string[] {
  if (count === 1) return ['203.0.113.7']
  return Array.from({ length: count }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.7`)
}

/** Both sides of one comparison: a store and the policy it decides under. */
interface Side {
  readonly store: Store
  readonly policies: readonly Policy[]
}

/**
 * The same policy on two stores: one that only ever saw it, one whose keys were all
 * written under another spec of the name and then converted (one take each).
 */
async function sides(
  make: () => Store,
  algorithm: RateAlgorithm,
  keys: readonly string[],
): Promise<[Side, Side]> {
  const now = [policyOf(algorithm, RATE.limit)]
  const before = [policyOf(algorithm, RATE.limit / 2)]
  const never = make()
  const once = make()
  for (const key of keys) {
    await never.take(key, now, 1)
    await once.take(key, before, 1)
    await once.take(key, now, 1)
  }
  return [
    { store: never, policies: now },
    { store: once, policies: now },
  ]
}

/** ns per `take` over `calls` synchronous decisions spread over `keys`. */
function memorySample(side: Side, keys: readonly string[], calls: number): number {
  const { store, policies } = side
  let refused = 0
  const started = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) {
    const result = store.take(keys[i % keys.length]!, policies, 1) as { allowed: boolean }
    if (!result.allowed) refused++
  }
  const ns = Number(process.hrtime.bigint() - started) / calls
  if (refused > 0) throw new Error(`${refused} decisions refused: the rate was reached`)
  return ns
}

/**
 * Whether a paired ratio shows a difference: when every round went the same way (its whole
 * range on one side of 1) by more than 3% at the median; anything less is noise.
 */
function measurable(ratio: Summary, slower: (r: number) => boolean): string {
  if ((ratio.min <= 1 && ratio.max >= 1) || Math.abs(ratio.median - 1) <= 0.03) return 'no'
  return slower(ratio.median) ? '**yes, slower**' : 'yes, faster'
}

function fmt(summary: Summary, digits = 1): string {
  return `${summary.median.toFixed(digits)} (${summary.min.toFixed(digits)}–${summary.max.toFixed(digits)})`
}

async function memoryTable(): Promise<void> {
  log('\n### `memoryStore.take`: ns per decision')
  log('')
  log(
    '| algorithm | keys | never reconfigured | reconfigured once | ratio (median, range) | a measurable cost |',
  )
  log('| --- | ---: | ---: | ---: | ---: | --- |')
  for (const algorithm of ALGORITHMS) {
    for (const count of [1, 10_000]) {
      const keys = keysOf(count)
      const [never, once] = await sides(() => memoryStore(), algorithm, keys)
      const calls = 400_000
      // Warm both sides up: JIT, and every key's row in the store.
      for (let i = 0; i < 3; i++) {
        memorySample(never, keys, calls)
        memorySample(once, keys, calls)
      }
      const a: number[] = []
      const b: number[] = []
      for (let round = 0; round < ROUNDS; round++) {
        if (round % 2 === 0) {
          a.push(memorySample(never, keys, calls))
          b.push(memorySample(once, keys, calls))
        } else {
          b.push(memorySample(once, keys, calls))
          a.push(memorySample(never, keys, calls))
        }
      }
      const ratio = pairedRatio(b, a)
      log(
        `| ${algorithm} | ${count.toLocaleString('en-US')} | ${fmt(summarize(a))} | ${fmt(summarize(b))} | ${fmt(ratio, 3)} | ${measurable(ratio, (r) => r > 1)} |`,
      )
    }
  }
}

interface RedisSample {
  readonly perSecond: number
  readonly scriptUs: number
  /** Commands the scripts ran per decision, by name. */
  readonly commands: Record<string, number>
}

async function counters(admin: Redis): Promise<Record<string, { calls: number; usec: number }>> {
  const info = String(await admin.call('INFO', 'commandstats'))
  const out: Record<string, { calls: number; usec: number }> = {}
  for (const [, name, calls, usec] of info.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)) {
    out[name!] = { calls: Number(calls), usec: Number(usec) }
  }
  return out
}

async function redisSample(side: Side, admin: Redis, key: string): Promise<RedisSample> {
  const before = await counters(admin)
  const started = performance.now()
  const stop = started + REDIS_SECONDS * 1000
  let decisions = 0
  while (performance.now() < stop) {
    if (!(await side.store.take(key, side.policies, 1)).allowed) throw new Error('refused')
    decisions++
  }
  const elapsed = performance.now() - started
  const after = await counters(admin)
  const delta = (name: string, field: 'calls' | 'usec') =>
    (after[name]?.[field] ?? 0) - (before[name]?.[field] ?? 0)
  const commands: Record<string, number> = {}
  for (const name of Object.keys(after)) {
    if (['info', 'evalsha', 'eval', 'script', 'config'].includes(name)) continue
    const n = delta(name, 'calls')
    if (n > 0) commands[name] = n / decisions
  }
  return {
    perSecond: (decisions / elapsed) * 1000,
    scriptUs: delta('evalsha', 'usec') / delta('evalsha', 'calls'),
    commands,
  }
}

function commandsText(samples: readonly RedisSample[]): string {
  const names = [...new Set(samples.flatMap((s) => Object.keys(s.commands)))].sort()
  return names
    .map(
      (name) => `${name} ${summarize(samples.map((s) => s.commands[name] ?? 0)).median.toFixed(2)}`,
    )
    .join(', ')
}

async function redisTable(): Promise<void> {
  const server = await startRedisServer()
  const clients: Redis[] = []
  const connect = () => {
    const client = new Redis({ host: '127.0.0.1', port: server.port })
    clients.push(client)
    return client
  }
  try {
    const admin = connect()
    log(
      `\n### \`redisStore.take\`: one decision in flight, hot key, ${REDIS_SECONDS} s per sample (redis-server on port ${server.port})`,
    )
    log('')
    log(
      '| algorithm | side | decisions/s | script µs per call | commands the script ran per decision |',
    )
    log('| --- | --- | ---: | ---: | --- |')
    const ratios: string[] = []
    let prefix = 0
    for (const algorithm of ALGORITHMS) {
      const make = () => redisStore({ client: connect(), prefix: `r${++prefix}:`, onError: 'deny' })
      const key = '203.0.113.7'
      const [never, once] = await sides(make, algorithm, [key])
      await redisSample(never, admin, key)
      await redisSample(once, admin, key)
      const a: RedisSample[] = []
      const b: RedisSample[] = []
      for (let round = 0; round < ROUNDS; round++) {
        if (round % 2 === 0) {
          a.push(await redisSample(never, admin, key))
          b.push(await redisSample(once, admin, key))
        } else {
          b.push(await redisSample(once, admin, key))
          a.push(await redisSample(never, admin, key))
        }
      }
      for (const [label, samples] of [
        ['never reconfigured', a],
        ['reconfigured once', b],
      ] as const) {
        log(
          `| ${algorithm} | ${label} | ${fmt(summarize(samples.map((s) => s.perSecond)), 0)} | ${fmt(summarize(samples.map((s) => s.scriptUs)), 2)} | ${commandsText(samples)} |`,
        )
      }
      const rate = pairedRatio(
        b.map((s) => s.perSecond),
        a.map((s) => s.perSecond),
      )
      const script = pairedRatio(
        b.map((s) => s.scriptUs),
        a.map((s) => s.scriptUs),
      )
      ratios.push(
        `| ${algorithm} | ${fmt(rate, 3)} | ${fmt(script, 3)} | ${measurable(rate, (r) => r < 1)} |`,
      )
    }
    log('')
    log(
      '| algorithm | decisions/s, reconfigured once / never (median, range) | script µs, the same | a measurable cost (decisions/s) |',
    )
    log('| --- | ---: | ---: | --- |')
    for (const row of ratios) log(row)
  } finally {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())))
    await server.stop()
  }
}

log(
  `reconfiguration bench: ${ROUNDS} rounds, paired (reconfigured once against never reconfigured). A difference is measurable when every round's ratio is on the same side of 1, by more than 3% at the median.`,
)
await memoryTable()
await redisTable()
