import type { AdaptiveResults } from './adaptive/run'
import { renderAdaptiveSection } from './adaptive/section'
import { EXACT_RATE, HOT_RATE, HTTP, KEYED_RATE, PACED_RATE, QUICK, runs, SECTIONS } from './config'
import { WARM_UP_MS } from './contenders'
import type { ScenarioResult } from './decision'
import { EXACTNESS_SCENARIOS, type ExactnessResult } from './exactness'
import type { HeapLine } from './heap'
import type { AppResult } from './http'
import { PEER_MIDDLEWARE, SLUICE_ADAPTER } from './http-apps'
import type { Machine } from './machine'
import type { PriorityResults } from './priority/run'
import { renderPrioritySection } from './priority/section'
import type { ProfileComparison, ProfileSummary } from './profile'
import { renderRedisSection } from './redis/report'
import type { RedisBenchResult } from './redis/run'
import type { Summary } from './stats'
import { pairedRatio } from './stats'
import { type Evidences, largestKeyed, ratioText, type TargetRow } from './targets'

/** Everything one run produced. */
export interface BenchReport {
  readonly startedAt: Date
  readonly seconds: number
  readonly machine: Machine
  readonly loadAverageAtEnd: number
  readonly revision: string
  readonly versions: readonly { name: string; version: string; role: string }[]
  readonly decision: readonly ScenarioResult[]
  readonly exactness: readonly ExactnessResult[]
  readonly adaptive: AdaptiveResults | undefined
  /** Priority load shedding (`bench/src/priority`); undefined when the section did not run. */
  readonly priority?: PriorityResults | undefined
  readonly http: readonly AppResult[]
  readonly targets: readonly TargetRow[]
  readonly evidence: Evidences
  /** The Redis store against its peers (`bench/src/redis`); undefined without redis-server. */
  readonly redis?: RedisBenchResult | undefined
}

const fixed = (digits: number) => (n: number) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a')
const ns = fixed(1)

function range(s: Summary, format: (n: number) => string): string {
  return s.n === 0 ? 'n/a' : `${format(s.min)}–${format(s.max)}`
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

function metText(met: boolean | undefined): string {
  if (met === undefined) return '—'
  return met ? '**met**' : '**missed**'
}

function rateText(rate: { limit: number; windowMs: number }): string {
  return `${rate.limit.toLocaleString('en-US')} per ${rate.windowMs.toLocaleString('en-US')} ms`
}

/** What each scenario's table is about, under its heading. */
function scenarioNote(scenario: ScenarioResult): string {
  const { shape, keys, maxKeys } = scenario.scenario
  switch (shape) {
    case 'insert':
      return `Every decision is for a key the structure has never seen: batches of 5,000 fresh keys, each batch timed on its own (median batch per sample); after ${keys.toLocaleString('en-US')} fresh keys the old structure is collected and a new one built, untimed, and its first decision is made before timing resumes. The floor inserts into its \`Map\`; sluice stores are sized to the pool, so nothing is evicted.`
    case 'churn':
      return `${keys.toLocaleString('en-US')} keys visited in turn through a sluice store of \`maxKeys\` ${(maxKeys ?? keys).toLocaleString('en-US')}: every visit finds its key evicted, evicts the least recently used one and starts it fresh. The floor keeps every key in its \`Map\`.`
    default:
      return ''
  }
}

function decisionSection(scenario: ScenarioResult): string {
  const showBytes = scenario.scenario.shape === 'keyed' && scenario.scenario.keys >= 100_000
  const header = [
    'contender',
    'ns/op (median)',
    'min–max',
    '× floor (per round)',
    'allocated B/decision',
  ]
  if (showBytes) header.push('retained B/key')
  const rows = scenario.results.map((r) => {
    if (r.error !== undefined) {
      return [
        r.contender.label,
        `failed: ${r.error.split('\n')[0]}`,
        '',
        '',
        '',
        ...(showBytes ? [''] : []),
      ]
    }
    const cells = [
      r.contender.label + (r.alwaysAdmitted ? '' : ' ⚠ limit reached'),
      ns(r.ns.median),
      range(r.ns, ns),
      ratioText(r.vsFloor),
      r.allocated === undefined ? 'n/a' : fixed(1)(r.allocated),
    ]
    if (showBytes) cells.push(r.bytesPerKey === undefined ? 'n/a' : fixed(1)(r.bytesPerKey))
    return cells
  })
  const note = scenarioNote(scenario)
  return `### ${scenario.scenario.title}\n\n${note === '' ? '' : `${note}\n\n`}${table(header, rows)}\n`
}

function memorySection(scenario: ScenarioResult | undefined): string {
  if (scenario === undefined) return 'Not measured in this run.\n'
  const rows = scenario.results
    .filter((r) => r.bytesPerKey !== undefined && r.error === undefined)
    .sort((a, b) => a.bytesPerKey! - b.bytesPerKey!)
    .map((r) => [r.contender.label, fixed(1)(r.bytesPerKey!)])
  return `${table(['structure', 'retained bytes per key'], rows)}\n`
}

/** sluice's req/s over the peer's, round by round. */
function vsPeer(http: readonly AppResult[], app: AppResult): string {
  if (app.variant !== 'sluice') return ''
  const peer = http.find((a) => a.framework === app.framework && a.variant === 'peer')
  if (peer === undefined || peer.runs.length === 0 || app.runs.length === 0) return ''
  const ratio = pairedRatio(
    app.runs.map((r) => r.rps),
    peer.runs.map((r) => r.rps),
  )
  return `${fixed(3)(ratio.median)} (${range(ratio, fixed(3))})`
}

function httpSection(http: readonly AppResult[]): string {
  const rows = http.map((a) => {
    const middleware = {
      bare: 'none',
      headers: 'the same two RateLimit headers as constants, no limiter',
      sluice: SLUICE_ADAPTER[a.framework],
      peer: PEER_MIDDLEWARE[a.framework],
      bulkhead: `${SLUICE_ADAPTER[a.framework]} bulkhead()`,
      'bulkhead-quiet': `${SLUICE_ADAPTER[a.framework]} bulkhead({ headers: false })`,
    }[a.variant]
    if (a.error !== undefined) {
      return [a.framework, middleware, `unavailable: ${a.error}`, '', '', '', '', '', '', '']
    }
    return [
      a.framework,
      middleware,
      Math.round(a.rps.median).toLocaleString('en-US'),
      range(a.rps, (n) => Math.round(n).toLocaleString('en-US')),
      fixed(3)(a.p99Ms.median),
      range(a.p99Ms, fixed(3)),
      a.vsBare === undefined ? '1' : `${fixed(3)(a.vsBare.median)} (${range(a.vsBare, fixed(3))})`,
      vsPeer(http, a),
      `${fixed(1)(a.cpuUs.median)}${a.addedCpuUs === undefined ? '' : ` (${signed(a.addedCpuUs.median, 1)})`}`,
      a.probe === undefined
        ? ''
        : a.probe.rateLimitHeaders.length === 0
          ? 'none'
          : a.probe.rateLimitHeaders.join(', ') + (a.failures > 0 ? ` ⚠ ${a.failures} failed` : ''),
    ]
  })
  return `${table(
    [
      'framework',
      'middleware',
      'req/s (median)',
      'req/s min–max',
      'p99 ms (median)',
      'p99 min–max',
      '× bare req/s (per round)',
      '× peer req/s (per round)',
      'server CPU µs/req (vs bare)',
      'rate-limit headers sent',
    ],
    rows,
  )}\n`
}

function exactnessSection(results: readonly ExactnessResult[]): string {
  const header = ['limiter', 'time simulated with']
  for (const s of EXACTNESS_SCENARIOS)
    header.push(`${s.name}: admitted`, `${s.name}: max in any 1 s`)
  const rows = results.map((r) => {
    const cells = [r.contender.short, r.clock]
    for (const s of EXACTNESS_SCENARIOS) {
      const o = r.outcomes[s.name]
      cells.push(
        o === undefined ? 'n/a' : String(o.admitted),
        o === undefined ? 'n/a' : String(o.maxPerSecond),
      )
    }
    return cells
  })
  return `${table(header, rows)}\n`
}

function profileText(profile: ProfileSummary, lines = 10): string {
  const top = profile.top
    .slice(0, lines)
    .map((l) => `| ${l.sluice ? '**sluice** ' : ''}\`${l.frame}\` | ${l.selfPct.toFixed(1)}% |`)
  return [
    `${profile.samples} busy samples; ${profile.sluiceAttributedPct.toFixed(1)}% owed to sluice (its own functions ${profile.sluiceSelfPct.toFixed(1)}%, the rest Node internals and ipaddr.js/@noble/hashes they call).`,
    '',
    '| function (self time) | share |',
    '| --- | --- |',
    ...top,
  ].join('\n')
}

function heapText(lines: readonly HeapLine[]): string {
  const total = lines.reduce((sum, l) => sum + l.bytesPerKey, 0)
  return [
    `${total.toFixed(1)} B/key over the kinds below (heap snapshot diff).`,
    '',
    '| kind of object | bytes per key | objects per key |',
    '| --- | --- | --- |',
    ...lines
      .slice(0, 14)
      .map(
        (l) => `| \`${l.kind}\` | ${l.bytesPerKey.toFixed(1)} | ${l.objectsPerKey.toFixed(2)} |`,
      ),
  ].join('\n')
}

function signed(n: number, digits: number): string {
  return `${n >= 0 ? '+' : '−'}${Math.abs(n).toFixed(digits)}`
}

function comparisonText(c: ProfileComparison): string {
  return [
    `Server CPU per request during the profiled runs: bare ${c.baseUs.toFixed(1)} µs, with sluice ${c.testUs.toFixed(1)} µs (${signed(c.testUs - c.baseUs, 1)} µs); with the server's core saturated that predicts ${(c.baseUs / c.testUs).toFixed(3)} of bare throughput. Where the difference goes (each function's share of its profile's samples × the process's CPU per request, sluice server minus bare server):`,
    '',
    '| function | added µs per request |',
    '| --- | --- |',
    ...c.added.map((a) => `| \`${a.frame}\` | ${signed(a.us, 2)} |`),
  ].join('\n')
}

/** The evidence section: one profile per distinct missed-target cause. */
function evidenceSection(report: BenchReport): string {
  const parts: string[] = []
  const seen = new Set<string>()
  for (const row of report.targets) {
    const e = row.evidence
    if (e === undefined) continue
    const key =
      e.kind === 'http'
        ? `http:${e.framework}`
        : e.kind === 'cpu'
          ? `cpu:${e.contender}@${e.scenario}`
          : `${e.kind}:${e.contender}`
    if (seen.has(key)) continue
    seen.add(key)
    if (e.kind === 'cpu') {
      const profile = report.evidence.cpu.get(`${e.contender}@${e.scenario}`)
      if (profile === undefined) continue
      const title =
        report.decision.find((s) => s.scenario.name === e.scenario)?.scenario.title ?? e.scenario
      parts.push(
        `### CPU profile: \`${e.contender}\` (${title}, its timed loop, run with \`--no-turbo-inlining\` so each function keeps its own samples)\n\n${profileText(profile)}\n`,
      )
    } else if (e.kind === 'heap') {
      const lines = report.evidence.heap.get(e.contender)
      if (lines === undefined) continue
      parts.push(`### Heap breakdown: \`${e.contender}\`\n\n${heapText(lines)}\n`)
    } else {
      const app = report.http.find((a) => a.framework === e.framework && a.variant === 'sluice')
      if (app?.profile === undefined) continue
      parts.push(
        `### CPU profiles: ${e.framework} server, bare and with ${SLUICE_ADAPTER[e.framework]}, under the same load\n\n${comparisonText(app.profile.vsBare)}\n\nThe ${SLUICE_ADAPTER[e.framework]} server's own profile: ${profileText(app.profile.sluice, 12)}\n`,
      )
    }
  }
  return parts.length === 0 ? 'Every target was met: nothing to explain.\n' : parts.join('\n')
}

/**
 * Renders RESULTS.md: machine, versions, method, targets with verdicts, every table, and
 * the profiles behind any missed target.
 */
export function renderReport(report: BenchReport): string {
  const { machine } = report
  const large = largestKeyed(report.decision)
  const skipped = SECTIONS.filter((section) => !runs(section))
  const out: string[] = []
  out.push('# sluice benchmarks')
  out.push('')
  out.push(
    `Written by \`pnpm bench\` on ${report.startedAt.toISOString()} in ${Math.round(report.seconds)} s. Do not edit by hand: rerun it.${QUICK ? '\n\n**Quick run (`BENCH_QUICK=1`): shortened phases; these numbers are a smoke test, not results.**' : ''}${skipped.length === 0 ? '' : `\n\n**Partial run: ${skipped.join(', ')} skipped (\`BENCH_SECTIONS\`); their targets show as not measured.**`}`,
  )
  out.push('')
  out.push('## Machine')
  out.push('')
  out.push(
    table(
      ['', ''],
      [
        ['CPU', machine.cpu],
        ['cores', String(machine.cores)],
        ['memory', `${machine.memoryGiB.toFixed(1)} GiB`],
        ['OS', machine.os],
        ['Node.js', `${machine.node} (V8 ${machine.v8})`],
        [
          'load average (1 min)',
          `${machine.loadAverage.toFixed(2)} at start, ${report.loadAverageAtEnd.toFixed(2)} at end`,
        ],
        ['sluice revision', report.revision],
      ],
    ),
  )
  out.push('')
  out.push('## Versions')
  out.push('')
  out.push(
    table(
      ['package', 'version', 'role'],
      report.versions.map((v) => [v.name, v.version, v.role]),
    ),
  )
  out.push('')
  out.push('## Targets')
  out.push('')
  for (const [issue, title] of [
    [27, 'Issue 27: local decisions, global limits (quota leases, the cluster store)'],
    [22, 'Issue 22: one kernel per algorithm, a store decision that allocates nothing'],
    [13, 'Issue 13: the per-request path as fast as the algorithms'],
    [7, 'Issue 7: the algorithms at the floor, and the first HTTP bounds'],
  ] as const) {
    out.push(`### ${title}`)
    out.push('')
    out.push(
      table(
        ['target', 'measured', 'verdict', 'by how much'],
        report.targets
          .filter((t) => t.issue === issue)
          .map((t) => [t.target, t.measured, metText(t.met), t.miss ?? '']),
      ),
    )
    out.push('')
  }
  out.push(
    'Ratios are medians of round-by-round ratios (min–max in brackets): both sides of each ratio were sampled in the same round, seconds apart, so a noisy stretch of the machine moves both. On a shared or busy machine the ranges are wide and a verdict near its bound can flip between runs: judge by a run on a quiet machine (see the load average above). What bounds each missed target is under [Why targets were missed](#why-targets-were-missed).',
  )
  out.push('')
  out.push('## 1. Decision cost')
  out.push('')
  out.push(
    `ns per decision; each sample is mitata's median over batches of calls (hand-timed batches for new keys), ${report.decision[0]?.scenario.rounds ?? 0} rounds per scenario (one warm-up round dropped). "× floor" is against the inline GCRA on a \`Map<string, number>\` with one \`performance.now()\` per decision, measured in the same rounds. "Allocated" is the growth of V8's used heap over a batch of decisions with no garbage collection in between, per decision (median of 7 batches): what one decision leaves behind or throws away. The floor's 16 B or so is the heap number a \`Map\` value holding a fraction is.`,
  )
  out.push('')
  if (report.decision.length === 0) out.push('Not measured in this run.\n')
  for (const scenario of report.decision) out.push(decisionSection(scenario))
  out.push('## 2. Memory')
  out.push('')
  out.push(
    `Retained bytes per key after one decision for each of ${(large?.scenario.keys ?? 0).toLocaleString('en-US')} keys: \`heapUsed + external\` after two forced GCs, minus the same before the structure was built, divided by the keys. The key strings exist before the baseline, so they are not counted; strings a library derives from them (a prefixed key) are.`,
  )
  out.push('')
  out.push(memorySection(large))
  out.push('## 3. HTTP overhead')
  out.push('')
  out.push(
    `Hello-world app, one child process per app, autocannon in the orchestrator on 127.0.0.1: ${HTTP.connections} connections, ${HTTP.duration} s per run, ${HTTP.rounds} rounds of bare → headers only → sluice → peer → sluice bulkhead → sluice bulkhead without headers after ${HTTP.warmup} s of unrecorded warm-up per app. Every rate limiter limits per client address at ${rateText(HOT_RATE)} (never reached) with all other options, headers included, at their defaults; the bulkhead has its defaults (20 at once, one for all requests, draft-8 headers), and again with \`headers: false\`. The headers-only app writes, as constants, the two headers sluice writes (same names, same lengths). p99 is computed from every response's own latency. Server CPU per request is the server process's user + system CPU time (\`process.cpuUsage()\`) over a run divided by its responses: unlike req/s it is not moved by other processes competing for the cores. "vs bare" is the median round-by-round difference; "× peer" is sluice's req/s over its peer's, round by round.`,
  )
  out.push('')
  out.push(report.http.length === 0 ? 'Not measured in this run.\n' : httpSection(report.http))
  out.push('## 4. Exactness')
  out.push('')
  out.push(
    `Against "${rateText(EXACT_RATE)}", one client. ${EXACTNESS_SCENARIOS.map((s) => `**${s.name}**: ${s.title}.`).join(' ')} "Max in any 1 s" is the most admitted in any half-open span [t, t + 1 s).`,
  )
  out.push('')
  out.push(
    report.exactness.length === 0
      ? 'Not measured in this run.\n'
      : exactnessSection(report.exactness),
  )
  out.push(
    'How time was simulated: sluice limiters take a `clock`, so each runs on a `ManualClock` set to every request time. The floor and the peers read `Date.now()` (express-rate-limit, hono-rate-limiter, rate-limiter-flexible), `process.hrtime()` (koa-ratelimit, which also reads its time base once at load, so it is loaded afresh inside the fake clock) or `performance.now()` (limiter, the floor), and expire state with `setTimeout`/`setInterval`; they run under @sinonjs/fake-timers with all of those faked, starting on a whole second, and the clock is ticked to each request time, so their timers fire in order exactly as they would in real time. No real time passes, so the numbers are exact and repeatable.',
  )
  out.push('')
  out.push('## 5. Adaptive concurrency (issue 16)')
  out.push('')
  out.push(
    report.adaptive === undefined
      ? 'Not measured in this run.\n'
      : renderAdaptiveSection(report.adaptive),
  )
  out.push('## 6. Priority load shedding (issue 29)')
  out.push('')
  out.push(
    report.priority === undefined
      ? 'Not measured in this run.\n'
      : renderPrioritySection(report.priority),
  )
  out.push(
    renderRedisSection(report.redis, {
      writtenBy: 'pnpm bench',
      when: report.startedAt,
      machine: 'the machine above',
    }),
    '',
  )
  out.push('## Why targets were missed')
  out.push('')
  out.push(evidenceSection(report))
  out.push('## Method')
  out.push('')
  out.push(
    [
      '- One `pnpm bench` runs every section in turn. Each decision-cost contender runs in a child process of its own (mitata inside it), so contenders share neither JIT feedback nor a heap; the orchestrator samples them in rounds, rotating the order every round.',
      '- sluice packages are measured from their TypeScript source (the `@sluice/source` export condition, compiled by tsx), as checked out at the revision above.',
      `- Rates: hot key ${rateText(HOT_RATE)}; many keys ${rateText(KEYED_RATE)} (each key keeps its state between visits, as a client that keeps talking does); leaky bucket ${rateText(PACED_RATE)} everywhere (burst 1, so only a pace above the call rate is never reached; its state is fresh again by each visit, so the memory store reuses its entry as fresh). Warm-up: ${WARM_UP_MS} ms ramp, measured warm. Every contender was checked to admit after every sample.`,
      "- Peers use their fastest in-memory path as their own middleware does: express-rate-limit and hono-rate-limiter `MemoryStore.increment`, rate-limiter-flexible `RateLimiterMemory.consume`, koa-ratelimit's memory driver (a Limiter per request around a shared Map), limiter `RateLimiter`/`TokenBucket.tryRemoveTokens` (one object for the hot key, a Map of them for many keys). Async paths are awaited per call.",
      '- "sluice … · tryAcquire" is a limiter object itself; "· Map of limiters" is `Map.get` + `tryAcquire`; "· memoryStore.take" is the per-key store the middleware uses (sized to the key count). "RateLimitEngine.admit + headers" is what an adapter runs per request, on a fresh minimal request (its address) and response (a plain object of headers) each time: key, policies, store, decision, draft-8 headers written through the accessors, the event check. "(a second process, the same)" is that engine again in a process of its own, for the noise between processes; "the event check" is what the engine does per decision for events while nobody subscribes (one `hasSubscribers` read), timed on its own. The bulkhead contenders take and give back one slot per call on a key with nothing else in flight ("held": with one slot held throughout).',
    ].join('\n'),
  )
  out.push('')
  return out.join('\n')
}
