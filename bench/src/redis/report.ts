import { type Summary, summarize } from '../stats'
import {
  bestPeer,
  cellOf,
  type RedisBenchResult,
  type RedisCell,
  type RedisScenarioResult,
  ratio,
} from './run'

const fixed = (digits: number) => (n: number) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a')
const int = (n: number) => Math.round(n).toLocaleString('en-US')

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

function withRange(s: Summary, format: (n: number) => string): string {
  return `${format(s.median)} (${format(s.min)}–${format(s.max)})`
}

/** Round-by-round difference a − b, summarised. */
function pairedDifference(a: readonly number[], b: readonly number[]): Summary {
  return summarize(a.map((value, i) => value - (b[i] ?? Number.NaN)))
}

/** A target of issue 18, with its verdict. */
export interface RedisTarget {
  readonly target: string
  readonly measured: string
  readonly met: boolean
}

const ALGORITHMS = [
  ['sluice-fixed-window', 'fixed window', 1.0, 1.0],
  ['sluice-sliding-window', 'sliding window', 1.3, 0.9],
  ['sluice-token-bucket', 'token bucket (GCRA)', 1.3, 0.9],
] as const

/** Issue 18's targets, judged on the medians of round-by-round ratios. */
export function evaluateRedisTargets(result: RedisBenchResult): RedisTarget[] {
  const targets: RedisTarget[] = []
  const ratioText = (s: Summary) => `${fixed(2)(s.median)}× (${fixed(2)(s.min)}–${fixed(2)(s.max)})`
  for (const [id, name, cpuBound, throughputBound] of ALGORITHMS) {
    const cpu = result.scenarios.map(
      (s) => [s, ratio(cellOf(s, id)!, bestPeer(s, 'cpu'), 'redisCpuUs')] as const,
    )
    targets.push({
      target: `Redis CPU per decision, ${name}: ≤ ${cpuBound === 1 ? 'the best peer' : `${cpuBound}× the best peer`} in every scenario`,
      measured: cpu.map(([s, r]) => `${s.scenario.name}: ${ratioText(r)}`).join('; '),
      met: cpu.every(([, r]) => r.median <= cpuBound),
    })
    const busy = result.scenarios.filter((s) => s.scenario.inFlight > 1)
    const rate = busy.map(
      (s) => [s, ratio(cellOf(s, id)!, bestPeer(s, 'throughput'), 'decisionsPerSecond')] as const,
    )
    targets.push({
      target: `Decisions/s at 200 in flight, ${name}: ≥ ${throughputBound === 1 ? 'the best peer' : `${throughputBound}× the best peer`}, hot key and 10k keys`,
      measured: rate.map(([s, r]) => `${s.scenario.name}: ${ratioText(r)}`).join('; '),
      met: rate.every(([, r]) => r.median >= throughputBound),
    })
  }
  // keyedLimiter.consume against rate-limiter-flexible's consume, same run (issue 26).
  const consumeRate = result.scenarios
    .filter((s) => s.scenario.inFlight > 1)
    .map(
      (s) =>
        [
          s,
          ratio(
            cellOf(s, 'sluice-keyed-consume')!,
            cellOf(s, 'rate-limiter-flexible')!,
            'decisionsPerSecond',
          ),
        ] as const,
    )
  const consumeTrips = result.scenarios.map(
    (s) => summarize(cellOf(s, 'sluice-keyed-consume')!.evalsPerDecision).median,
  )
  targets.push({
    target:
      '`keyedLimiter.consume` (issue 26): at most one round trip per call, and decisions/s at 200 in flight ≥ rate-limiter-flexible `consume`, hot key and 10k keys',
    measured: `${consumeRate.map(([s, r]) => `${s.scenario.name}: ${ratioText(r)}`).join('; ')}; ${fixed(3)(Math.min(...consumeTrips))}–${fixed(3)(Math.max(...consumeTrips))} EVALSHA per call`,
    met: consumeRate.every(([, r]) => r.median >= 1) && consumeTrips.every((t) => t <= 1.001),
  })
  const own = result.overhead.filter((o) => o.id.startsWith('sluice-'))
  const worst = Math.max(...own.map((o) => o.us.median))
  const busy = result.scenarios
    .filter((s) => s.scenario.inFlight > 1)
    .flatMap((s) =>
      ALGORITHMS.map(
        ([id]) => pairedDifference(cellOf(s, id)!.nodeCpuUs, cellOf(s, 'floor')!.nodeCpuUs).median,
      ),
    )
  targets.push({
    target: 'Node CPU per decision in the store: ≤ 3 µs',
    measured: `the store's own code: ${own.map((o) => `${o.id.replace('sluice-', '')} ${fixed(2)(o.us.median)} µs`).join(', ')}; the whole process at 200 in flight, over the floor: ${fixed(2)(Math.min(...busy))} to ${fixed(2)(Math.max(...busy))} µs`,
    met: worst <= 3,
  })
  const sluiceCells = result.scenarios.flatMap((s) => ALGORITHMS.map(([id]) => cellOf(s, id)!))
  const trips = sluiceCells.map((cell) => summarize(cell.evalsPerDecision).median)
  const noScript = sluiceCells.reduce((sum, cell) => sum + cell.noScript, 0)
  targets.push({
    target:
      'At most one round trip per decision (one EVALSHA, or fewer: concurrent takes of a hot key share one; no NOSCRIPT retries)',
    measured: `${fixed(3)(Math.min(...trips))}–${fixed(3)(Math.max(...trips))} EVALSHA per decision, ${noScript} NOSCRIPT`,
    met: trips.every((t) => t <= 1.001) && noScript === 0,
  })
  return targets
}

function scenarioTable(s: RedisScenarioResult): string {
  const floor = cellOf(s, 'floor')!
  const bestRate = bestPeer(s, 'throughput')
  const bestCpu = bestPeer(s, 'cpu')
  const rows = s.cells.map((cell: RedisCell) => {
    const rate = summarize(cell.decisionsPerSecond)
    const node = summarize(cell.nodeCpuUs)
    const isPeerOrFloor = cell.contender.kind !== 'sluice'
    return [
      cell.contender.label + (cell.refused > 0 ? ` ⚠ ${cell.refused} refused` : ''),
      withRange(rate, int),
      fixed(2)(summarize(cell.p99Ms).median),
      `${fixed(3)(summarize(cell.evalsPerDecision).median)}${cell.noScript > 0 ? ` (${cell.noScript} NOSCRIPT)` : ''}`,
      withRange(summarize(cell.redisCpuUs), fixed(2)),
      fixed(2)(summarize(cell.scriptUs).median),
      `${fixed(2)(node.median)}${cell === floor ? '' : ` (+${fixed(2)(pairedDifference(cell.nodeCpuUs, floor.nodeCpuUs).median)})`}`,
      isPeerOrFloor ? '' : fixed(2)(ratio(cell, bestRate, 'decisionsPerSecond').median),
      isPeerOrFloor ? '' : fixed(2)(ratio(cell, bestCpu, 'redisCpuUs').median),
    ]
  })
  return `### ${s.scenario.title}\n\n${table(
    [
      'contender',
      'decisions/s (median, min–max)',
      'p99 ms',
      'EVALSHA / decision',
      'Redis CPU µs / decision',
      'of which in EVALSHA, µs',
      'Node CPU µs / decision (over floor)',
      '× best peer decisions/s',
      '× best peer Redis CPU',
    ],
    rows,
  )}\n`
}

/** The markers around the section, so `pnpm bench:redis` can replace it in RESULTS.md. */
export const REDIS_SECTION_START = '<!-- redis:start -->'
export const REDIS_SECTION_END = '<!-- redis:end -->'

/**
 * The "Redis store" section of RESULTS.md: how it was run, the targets of issue 18 with
 * verdicts, and one table per scenario.
 */
export function renderRedisSection(
  result: RedisBenchResult | undefined,
  context: { readonly writtenBy: string; readonly when: Date; readonly machine: string },
): string {
  const out: string[] = [REDIS_SECTION_START, '## Redis store', '']
  if (result === undefined) {
    out.push('Not measured in this run: no redis-server was found.', '', REDIS_SECTION_END)
    return out.join('\n')
  }
  out.push(
    `Written by \`${context.writtenBy}\` on ${context.when.toISOString()} (${context.machine}). One redis-server ${result.redisVersion} started by the bench on 127.0.0.1 (persistence off), ioredis ${result.ioredisVersion}, one connection per contender. ${result.rounds} rounds × ${result.seconds} s per cell, rounds interleaved: each round samples every contender of every scenario in rotating order. Every contender limits at a billion per hour per key (never reached), so every decision is an admitted one.`,
    '',
    '- **decisions/s**: decisions completed per second of the sample; with N in flight, N loops each await one decision after another.',
    "- **p99**: of every decision's own latency in the sample.",
    '- **EVALSHA / decision**, **Redis CPU / decision** and **in EVALSHA**: deltas of `INFO commandstats` (EVALSHA and EVAL calls, the requests: the commands a script runs are counted there too, but are no round trips), `INFO errorstats` (NOSCRIPT) and `INFO cpu` (`used_cpu_user + used_cpu_sys` of the redis-server process) over the sample, divided by its decisions. "In EVALSHA" is the time commandstats counts inside EVALSHA per call: the script alone. The process CPU also counts reading requests and writing replies, which costs less per decision the more requests one read brings, so on a busy machine it moves with scheduling; the script time does not.',
    '- **Node CPU**: `process.cpuUsage()` of the bench process over the sample, per decision: the loop and ioredis included, which the floor (an EVALSHA of `return 1` through the same client) measures alone; "over floor" is what the store adds.',
    '- Ratios are medians of round-by-round ratios (min–max in brackets) against the peer that is best on that measure in that scenario.',
    '',
    '### Targets (issue 18)',
    '',
    table(
      ['target', 'measured', 'verdict'],
      evaluateRedisTargets(result).map((t) => [
        t.target,
        t.measured,
        t.met ? '**met**' : '**missed**',
      ]),
    ),
    '',
  )
  for (const s of result.scenarios) out.push(scenarioTable(s))
  out.push(
    '### What each library adds in this process',
    '',
    "CPU per decision on a client that answers at once (no socket, no Redis), minus a bare `await` of that client: the library's own code, which the process-wide figures above bury under a write and a read system call per request. sluice answers an admitted one-policy take with an integer; the peers' replies are `[count, ttl]`.",
    '',
    table(
      ['library', 'µs per decision (median, min–max)'],
      result.overhead.map((o) => [o.label, withRange(o.us, fixed(3))]),
    ),
    '',
    REDIS_SECTION_END,
  )
  return out.join('\n')
}
