import { createRequire } from 'node:module'
import { Redis } from 'ioredis'
import { findRedisServer, startRedisServer } from '../../../packages/redis/test/redis-server'
import { pairedRatio, percentile, type Summary, summarize } from '../stats'
import { type Decide, REDIS_CONTENDERS, type RedisContender } from './contenders'
import { measureOverhead, type OverheadResult } from './overhead'

/** One load shape: requests in flight at once, and how many client keys they spread over. */
export interface RedisScenario {
  readonly name: string
  readonly title: string
  readonly inFlight: number
  readonly keys: number
}

export const REDIS_SCENARIOS: readonly RedisScenario[] = [
  { name: '1-hot', title: '1 in flight, one hot key', inFlight: 1, keys: 1 },
  { name: '1-10k', title: '1 in flight, 10,000 keys', inFlight: 1, keys: 10_000 },
  { name: '200-hot', title: '200 in flight, one hot key', inFlight: 200, keys: 1 },
  { name: '200-10k', title: '200 in flight, 10,000 keys', inFlight: 200, keys: 10_000 },
]

/**
 * The scenarios to run: all, or those `BENCH_REDIS_SCENARIOS` names (comma-separated, e.g.
 * `200-hot`) for a short look at one load shape; such a run writes no RESULTS.md.
 */
export const REDIS_ONLY = process.env.BENCH_REDIS_SCENARIOS?.split(',').filter(Boolean)

function scenariosToRun(): readonly RedisScenario[] {
  if (REDIS_ONLY === undefined) return REDIS_SCENARIOS
  const unknown = REDIS_ONLY.filter((name) => !REDIS_SCENARIOS.some((s) => s.name === name))
  if (unknown.length !== 0) {
    throw new Error(
      `BENCH_REDIS_SCENARIOS: unknown ${unknown.join(', ')}; known: ${REDIS_SCENARIOS.map((s) => s.name).join(', ')}`,
    )
  }
  return REDIS_SCENARIOS.filter((s) => REDIS_ONLY.includes(s.name))
}

/** How long the comparison runs: `BENCH_REDIS_ROUNDS` × `BENCH_REDIS_SECONDS` per cell. */
export const REDIS_SAMPLING = {
  rounds: Number(process.env.BENCH_REDIS_ROUNDS ?? 5),
  seconds: Number(process.env.BENCH_REDIS_SECONDS ?? 5),
}

/** One contender's samples in one scenario, one per round. */
export interface RedisCell {
  readonly contender: RedisContender
  readonly decisionsPerSecond: number[]
  readonly p99Ms: number[]
  /**
   * Requests per decision: EVALSHA and EVAL calls (`INFO commandstats` also counts the
   * commands a script runs, which are no round trips).
   */
  readonly evalsPerDecision: number[]
  /** NOSCRIPT errors over all samples (`INFO errorstats`): retries of an uncached script. */
  noScript: number
  /**
   * Redis's time inside EVALSHA per call (`INFO commandstats` usec / calls): the script
   * alone, without reading and parsing the request or writing the reply.
   */
  readonly scriptUs: number[]
  /** Redis process CPU (user + system, INFO cpu) per decision, in µs. */
  readonly redisCpuUs: number[]
  /** This process's CPU per decision, in µs (harness and ioredis included: see the floor). */
  readonly nodeCpuUs: number[]
  /** Decisions that were refused (none should be: the rate is never reached). */
  refused: number
}

export interface RedisScenarioResult {
  readonly scenario: RedisScenario
  readonly cells: readonly RedisCell[]
}

export interface RedisBenchResult {
  readonly redisVersion: string
  readonly ioredisVersion: string
  readonly rounds: number
  readonly seconds: number
  readonly scenarios: readonly RedisScenarioResult[]
  /** Each library's own CPU per decision, its Redis client left out. */
  readonly overhead: readonly OverheadResult[]
}

function overheadOf(log: (line: string) => void, rounds: number): Promise<OverheadResult[]> {
  log('  library overhead (a client that answers at once)')
  return measureOverhead(rounds)
}

function statsOf(info: string, pattern: RegExp): number {
  let total = 0
  for (const match of info.matchAll(pattern)) total += Number(match[1])
  return total
}

/** Redis process CPU in µs, scripts called and NOSCRIPT errors so far. */
async function redisCounters(
  admin: Redis,
): Promise<{ cpuUs: number; evals: number; evalUs: number; noScript: number }> {
  const info = String(await admin.call('INFO', 'cpu', 'commandstats', 'errorstats'))
  const cpu = statsOf(info, /^used_cpu_user:([\d.]+)/gm) + statsOf(info, /^used_cpu_sys:([\d.]+)/gm)
  const evals = statsOf(info, /^cmdstat_eval(?:sha)?:calls=(\d+)/gm)
  const evalUs = statsOf(info, /^cmdstat_eval(?:sha)?:calls=\d+,usec=(\d+)/gm)
  const noScript = statsOf(info, /^errorstat_NOSCRIPT:count=(\d+)/gm)
  return { cpuUs: cpu * 1e6, evals, evalUs, noScript }
}

/** Runs `inFlight` loops of decisions for `seconds`, over `keys`. */
async function sample(
  decide: Decide,
  scenario: RedisScenario,
  keys: readonly string[],
  seconds: number,
): Promise<{ decisions: number; refused: number; latencies: Float64Array; elapsedMs: number }> {
  const latencies: number[] = []
  let next = 0
  let refused = 0
  const started = performance.now()
  const stop = started + seconds * 1000
  const loop = async () => {
    while (performance.now() < stop) {
      const key = keys[next++ % keys.length]!
      const t0 = performance.now()
      if (!(await decide(key))) refused++
      latencies.push(performance.now() - t0)
    }
  }
  await Promise.all(Array.from({ length: scenario.inFlight }, loop))
  return {
    decisions: latencies.length,
    refused,
    latencies: Float64Array.from(latencies),
    elapsedMs: performance.now() - started,
  }
}

function clientKeys(count: number): string[] {
  if (count === 1) return ['203.0.113.7']
  return Array.from(
    { length: count },
    (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
  )
}

/**
 * The Redis comparison: one redis-server started here, every contender on its own ioredis
 * connection, rounds interleaved (each round samples every contender of every scenario,
 * in rotating order, so a noisy stretch of the machine hits all of them).
 */
export async function runRedisBench(
  log: (line: string) => void,
  sampling = REDIS_SAMPLING,
): Promise<RedisBenchResult | undefined> {
  if (findRedisServer() === undefined) {
    log('  redis-server not found (PATH or $REDIS_SERVER): Redis comparison skipped')
    return undefined
  }
  const server = await startRedisServer()
  const admin = new Redis({ host: '127.0.0.1', port: server.port })
  const redisVersion = /redis_version:([\d.]+)/.exec(await admin.info('server'))?.[1] ?? 'unknown'
  const opened = await Promise.all(REDIS_CONTENDERS.map((c) => c.open(server.port)))
  try {
    const results: RedisScenarioResult[] = scenariosToRun().map((scenario) => ({
      scenario,
      cells: REDIS_CONTENDERS.map((contender) => ({
        contender,
        decisionsPerSecond: [],
        p99Ms: [],
        evalsPerDecision: [],
        scriptUs: [],
        redisCpuUs: [],
        nodeCpuUs: [],
        refused: 0,
        noScript: 0,
      })),
    }))
    // One unrecorded second per contender and scenario: JIT, scripts loaded, keys made.
    for (const result of results) {
      const keys = clientKeys(result.scenario.keys)
      for (const [i] of REDIS_CONTENDERS.entries()) {
        await sample(opened[i]!.decide, result.scenario, keys, 1)
      }
    }
    for (let round = 0; round < sampling.rounds; round++) {
      for (const result of results) {
        const keys = clientKeys(result.scenario.keys)
        const order = REDIS_CONTENDERS.map((_, i) => (i + round) % REDIS_CONTENDERS.length)
        for (const i of order) {
          const cell = result.cells[i]!
          const before = await redisCounters(admin)
          const cpu = process.cpuUsage()
          const run = await sample(opened[i]!.decide, result.scenario, keys, sampling.seconds)
          const node = process.cpuUsage(cpu)
          const after = await redisCounters(admin)
          cell.decisionsPerSecond.push((run.decisions / run.elapsedMs) * 1000)
          cell.p99Ms.push(percentile(run.latencies, 99))
          cell.evalsPerDecision.push((after.evals - before.evals) / run.decisions)
          cell.scriptUs.push((after.evalUs - before.evalUs) / (after.evals - before.evals))
          cell.noScript += after.noScript - before.noScript
          cell.redisCpuUs.push((after.cpuUs - before.cpuUs) / run.decisions)
          cell.nodeCpuUs.push((node.user + node.system) / run.decisions)
          cell.refused += run.refused
        }
        log(`  round ${round + 1}/${sampling.rounds}: ${result.scenario.title}`)
      }
    }
    const overhead = REDIS_ONLY === undefined ? await overheadOf(log, sampling.rounds) : []
    return {
      overhead,
      redisVersion,
      ioredisVersion: installedIoredis(),
      rounds: sampling.rounds,
      seconds: sampling.seconds,
      scenarios: results,
    }
  } finally {
    await Promise.all(opened.map((o) => o.close().catch(() => {})))
    await admin.quit().catch(() => {})
    await server.stop()
  }
}

/** The ioredis the contenders load (resolved from the bench package). */
function installedIoredis(): string {
  const require = createRequire(import.meta.url)
  return (require('ioredis/package.json') as { version: string }).version
}

/** A contender's cell in a scenario. */
export function cellOf(result: RedisScenarioResult, id: string): RedisCell | undefined {
  return result.cells.find((cell) => cell.contender.id === id)
}

/** The peer with the most decisions per second in the scenario (by median). */
export function bestPeer(result: RedisScenarioResult, by: 'throughput' | 'cpu'): RedisCell {
  const peers = result.cells.filter((cell) => cell.contender.kind === 'peer')
  const score = (cell: RedisCell) =>
    by === 'throughput'
      ? summarize(cell.decisionsPerSecond).median
      : -summarize(cell.redisCpuUs).median
  return peers.reduce((best, cell) => (score(cell) > score(best) ? cell : best))
}

/** Round-by-round ratio of a to b on one measure. */
export function ratio(a: RedisCell, b: RedisCell, measure: keyof RedisCell): Summary {
  return pairedRatio(a[measure] as number[], b[measure] as number[])
}
