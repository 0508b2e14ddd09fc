/**
 * `pnpm bench`: every section in one run, so that ratios between sluice, its peers and
 * the floor hold on a noisy machine; writes bench/RESULTS.md.
 */
import { writeFileSync } from 'node:fs'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { runAdaptive } from './adaptive/run'
import { QUICK, runs, scenariosToRun } from './config'
import {
  contendersFor,
  heapOf,
  profileContender,
  runDecisionScenario,
  type ScenarioResult,
} from './decision'
import { runExactness } from './exactness'
import type { HeapLine } from './heap'
import { runHttp } from './http'
import { issue27Rows } from './issue27'
import { describeMachine, measuredVersions, sluiceRevision } from './machine'
import { runPriority } from './priority/run'
import type { ProfileSummary } from './profile'
import { runRedisBench } from './redis/run'
import { renderReport } from './report'
import { renderSubBenches, runSubBench, SUB_BENCHES, type SubBenchResult } from './sub-bench'
import { evaluateTargets, HTTP_FRACTION } from './targets'

const RESULTS = fileURLToPath(new URL('../RESULTS.md', import.meta.url))

async function main(): Promise<void> {
  const startedAt = new Date()
  const started = performance.now()
  const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0)} s`
  const log = (line: string) => console.log(line)
  const machine = describeMachine()
  log(
    `sluice bench${QUICK ? ' (quick)' : ''}: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}`,
  )

  let exactness: Awaited<ReturnType<typeof runExactness>> = []
  if (runs('exactness')) {
    log(`\n[${elapsed()}] Exactness`)
    exactness = await runExactness()
  }

  let adaptive: ReturnType<typeof runAdaptive> | undefined
  if (runs('adaptive')) {
    log(`\n[${elapsed()}] Adaptive concurrency (simulated)`)
    adaptive = runAdaptive(log)
  }

  let priority: Awaited<ReturnType<typeof runPriority>> | undefined
  if (runs('priority')) {
    log(`\n[${elapsed()}] Priority load shedding (simulated)`)
    priority = await runPriority(log)
  }

  const decision: ScenarioResult[] = []
  if (runs('decision')) {
    for (const scenario of scenariosToRun()) {
      log(`\n[${elapsed()}] Decision cost: ${scenario.title}`)
      decision.push(await runDecisionScenario(scenario, contendersFor(scenario.shape), log))
    }
  }

  let http: Awaited<ReturnType<typeof runHttp>> = []
  if (runs('http')) {
    log(`\n[${elapsed()}] HTTP overhead`)
    http = await runHttp(log, { profileBelow: HTTP_FRACTION })
  }

  log(`\n[${elapsed()}] Redis store`)
  const redis = await runRedisBench(log)

  const sub: SubBenchResult[] = []
  if (runs('processes')) {
    for (const bench of SUB_BENCHES) {
      log(`\n[${elapsed()}] ${bench.title}`)
      let result = await runSubBench(bench, log)
      // One more try for a run that died (a socket error while a bench's clients close),
      // with the first error kept in the report.
      if (result.error !== undefined) {
        log(`  ${result.error}; once more`)
        const again = await runSubBench(bench, log)
        result = {
          ...again,
          error: again.error ?? undefined,
          retried: result.error,
          retriedStderr: result.stderr,
        }
      }
      sub.push(result)
    }
  }

  const targets = [
    // Issue 27's are judged by the sub-benches (their own processes): not measured without them.
    ...(runs('processes') ? issue27Rows(sub.flatMap((result) => result.targets)) : []),
    ...evaluateTargets({ decision, http }),
  ]
  const cpu = new Map<string, ProfileSummary>()
  const heap = new Map<string, readonly HeapLine[]>()
  const missed = targets.filter((t) => t.evidence !== undefined)
  if (missed.length > 0) log(`\n[${elapsed()}] Evidence for ${missed.length} missed target(s)`)
  for (const { evidence } of missed) {
    try {
      const scenario =
        evidence?.kind === 'cpu'
          ? decision.find((s) => s.scenario.name === evidence.scenario)?.scenario
          : undefined
      const cpuKey = evidence?.kind === 'cpu' ? `${evidence.contender}@${evidence.scenario}` : ''
      if (evidence?.kind === 'cpu' && scenario !== undefined && !cpu.has(cpuKey)) {
        log(`  CPU profile of ${evidence.contender} (${scenario.title})`)
        cpu.set(cpuKey, await profileContender(evidence.contender, scenario, 1500))
      } else if (evidence?.kind === 'heap' && !heap.has(evidence.contender)) {
        // Two heap snapshots of a million keys would take minutes; at 100,000 the split
        // per key is the same (the store's LRU is sized to the keys either way) and the
        // worker's own few hundred kilobytes of code and strings are lost in it.
        log(`  heap breakdown of ${evidence.contender}`)
        heap.set(evidence.contender, await heapOf(evidence.contender, QUICK ? 20_000 : 100_000))
      }
    } catch (error) {
      log(`  failed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`)
    }
  }

  const markdown = renderReport({
    startedAt,
    seconds: (performance.now() - started) / 1000,
    machine,
    loadAverageAtEnd: os.loadavg()[0] ?? 0,
    revision: sluiceRevision(),
    versions: measuredVersions(),
    decision,
    exactness,
    adaptive,
    priority,
    http,
    targets,
    evidence: { cpu, heap },
    redis,
  })
  // A partial run (BENCH_SECTIONS, BENCH_SCENARIOS, ...) would overwrite the full one.
  const partial = [
    'BENCH_SECTIONS',
    'BENCH_SCENARIOS',
    'BENCH_CONTENDERS',
    'BENCH_FRAMEWORKS',
    'BENCH_VARIANTS',
  ].some((name) => (process.env[name] ?? '') !== '')
  const out = partial ? RESULTS.replace(/\.md$/, '.partial.md') : RESULTS
  writeFileSync(
    out,
    sub.length === 0 ? markdown : `${markdown.trimEnd()}\n\n${renderSubBenches(sub, 7)}`,
  )

  log(`\n[${elapsed()}] Targets`)
  for (const t of targets) {
    if (t.met === undefined && t.measured === 'not measured') continue
    const verdict = t.met === undefined ? 'n/a   ' : t.met ? 'met   ' : 'MISSED'
    log(
      `  ${verdict} #${t.issue} ${t.target.replaceAll('`', '')}: ${t.measured}${t.miss ? ` — ${t.miss}` : ''}`,
    )
  }
  log(`\nWrote ${out}`)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
