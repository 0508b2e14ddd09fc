// The cluster store against rate-limiter-flexible's RateLimiterCluster: 4 node:cluster
// workers deciding on one hot key through the primary, each with 1 and with 50 decisions
// in flight; decisions/s over all workers, the decision latency's p50/p99 (from the call
// to its answer) and the CPU per decision of the primary and of the workers. Beside them,
// the floor: a bare node:cluster IPC round trip (a worker's message to the primary and its
// answer) under the same load. Every cell runs once per round, in an order rotated each
// round, and the tables give the median over rounds (min–max), so a noisy stretch of a
// shared machine moves every contender. Plus one exactness run: 4 workers at 2× the limit.
//
//   pnpm --filter @sluice/bench bench:cluster
//   (BENCH_CLUSTER_SECONDS per run, default 3; BENCH_CLUSTER_ROUNDS, default 3)
//
// Each run is a fresh primary process (this file with `--run <json>`), so contenders never
// share a primary's event loop or JIT; the load comes from the workers themselves, as a
// server's requests would.
import { spawn } from 'node:child_process'
import cluster from 'node:cluster'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { clusterStore } from '@sluice/cluster'
import { keyedLimiter } from '@sluice/keyed'
import { RateLimiterCluster, RateLimiterClusterMaster } from 'rate-limiter-flexible'
import { CLUSTER_LEASE_FACTOR, CLUSTER_P99_US, targetLine } from '../issue27'

type Contender = 'sluice exact' | 'sluice leased' | 'rlf RateLimiterCluster' | 'IPC round trip'

interface Run {
  readonly contender: Contender
  readonly inFlight: number
  readonly workers: number
  readonly seconds: number
  /** Decisions per worker instead of a duration: the exactness run. */
  readonly attempts?: number
  readonly limit: number
}

interface WorkerReport {
  readonly decisions: number
  readonly admitted: number
  readonly errors: number
  readonly seconds: number
  /** User + system CPU over the measured time, µs. */
  readonly cpuUs: number
  /** Decisions per whole microsecond of latency, [µs, count] for the non-empty ones. */
  readonly histogram: [number, number][]
}

const WORKERS = 4
const SECONDS = Number(process.env.BENCH_CLUSTER_SECONDS ?? 3)
const ROUNDS = Number(process.env.BENCH_CLUSTER_ROUNDS ?? 3)
const WARM_UP_MS = 1000
/** Never reached in a timed run: every decision is an admission, so all contenders do the same work. */
const BIG_LIMIT = 1_000_000_000
/** A block of 10,000 permits (share × limit), renewed every second at most. */
const LEASE = { share: 0.00001, ttl: '1s' } as const
const CONTENDERS: readonly Contender[] = [
  'sluice exact',
  'sluice leased',
  'rlf RateLimiterCluster',
  'IPC round trip',
]

const self = fileURLToPath(import.meta.url)
const runArg = process.argv.indexOf('--run')

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
const int = (n: number) => Math.round(n).toLocaleString('en-US')
const spread = (values: readonly number[], format: (n: number) => string = int) =>
  `${format(median(values))} (${format(Math.min(...values))}–${format(Math.max(...values))})`

async function main(): Promise<void> {
  const cells: Run[] = []
  for (const contender of CONTENDERS) {
    for (const inFlight of [1, 50]) {
      cells.push({ contender, inFlight, workers: WORKERS, seconds: SECONDS, limit: BIG_LIMIT })
    }
  }
  console.log(
    `node ${process.version}, ${WORKERS} workers, ${SECONDS} s per run after ${WARM_UP_MS} ms of warm-up, ${ROUNDS} rounds, one hot key; ${os.cpus().length} cores, load average ${os.loadavg()[0]!.toFixed(2)} at start`,
  )
  const results = new Map<Run, Summary[]>(cells.map((cell) => [cell, []]))
  const failures = new Map<Run, string>()
  for (let round = 0; round < ROUNDS; round++) {
    // Rotated each round: no contender always runs first (or right after another).
    const order = cells.map((_, i) => cells[(i + round * 3) % cells.length]!)
    for (const cell of order) {
      try {
        results.get(cell)!.push(await inChild(cell))
      } catch (error) {
        failures.set(cell, (error instanceof Error ? error.message : String(error)).split('\n')[0]!)
      }
    }
  }
  console.log('')
  console.log(
    '| contender | in flight per worker | decisions/s | p50 µs | p99 µs | CPU µs per decision: primary | workers | errors |',
  )
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const cell of cells) {
    const runs = results.get(cell)!
    if (runs.length === 0) {
      console.log(
        `| ${cell.contender} | ${cell.inFlight} | failed: ${failures.get(cell)} | | | | | |`,
      )
      continue
    }
    const oneDigit = (n: number) => n.toFixed(1)
    console.log(
      `| ${cell.contender} | ${cell.inFlight} | ${spread(runs.map((r) => r.perSecond))} | ${spread(runs.map((r) => r.p50Us))} | ${spread(runs.map((r) => r.p99Us))} | ${spread(
        runs.map((r) => r.primaryCpuUs),
        oneDigit,
      )} | ${spread(
        runs.map((r) => r.workerCpuUs),
        oneDigit,
      )} | ${runs.reduce((sum, r) => sum + r.errors, 0)} |`,
    )
  }
  console.log(
    `\nMedians over ${ROUNDS} rounds (min–max). "IPC round trip" is the floor: each decision a bare message to the primary and its answer, nothing decided. CPU per decision: process.cpuUsage() of the primary and of the workers (together) over the measured time, per decision. Load average at the end: ${os.loadavg()[0]!.toFixed(2)}.`,
  )

  const cellOf = (contender: Contender, inFlight: number) =>
    cells.find((c) => c.contender === contender && c.inFlight === inFlight)!
  const exact1 = results.get(cellOf('sluice exact', 1))!
  const floor1 = results.get(cellOf('IPC round trip', 1))!
  if (exact1.length > 0) {
    const p99 = median(exact1.map((r) => r.p99Us))
    const floor = floor1.length > 0 ? median(floor1.map((r) => r.p99Us)) : Number.NaN
    console.log(
      targetLine(
        'clusterP99',
        `${int(p99)} µs (median of ${exact1.length} rounds); the bare IPC round trip's p99 under the same load: ${int(floor)} µs`,
        p99 <= CLUSTER_P99_US,
        `${int(p99 - CLUSTER_P99_US)} µs over; the floor alone is ${int(floor)} µs`,
      ),
    )
  }
  for (const inFlight of [1, 50] as const) {
    const leased = results.get(cellOf('sluice leased', inFlight))!
    const rlf = results.get(cellOf('rlf RateLimiterCluster', inFlight))!
    if (leased.length === 0 || rlf.length === 0) continue
    const ratio = median(leased.map((r) => r.perSecond)) / median(rlf.map((r) => r.perSecond))
    console.log(
      targetLine(
        `clusterLease:${inFlight}`,
        `${ratio.toFixed(1)}× (${int(median(leased.map((r) => r.perSecond)))} vs ${int(median(rlf.map((r) => r.perSecond)))} decisions/s)`,
        ratio >= CLUSTER_LEASE_FACTOR,
        `${(CLUSTER_LEASE_FACTOR - ratio).toFixed(1)}× short`,
      ),
    )
  }

  const exactness: Run = {
    contender: 'sluice exact',
    inFlight: 50,
    workers: WORKERS,
    seconds: 0,
    attempts: 5_000,
    limit: 10_000,
  }
  try {
    const exact = await inChild(exactness)
    console.log(
      `\nexactness: ${WORKERS} workers × ${exactness.attempts} attempts at limit ${exactness.limit}: admitted ${exact.admitted}`,
    )
    console.log(
      targetLine(
        'clusterBudget',
        `admitted ${int(exact.admitted)} of ${int(WORKERS * exactness.attempts!)} attempts at a limit of ${int(exactness.limit)}`,
        exact.admitted === exactness.limit,
        `admitted ${int(exact.admitted)}`,
      ),
    )
  } catch (error) {
    console.log(`\nexactness: failed: ${error instanceof Error ? error.message : String(error)}`)
  }
}

interface Summary {
  readonly perSecond: number
  readonly p50Us: number
  readonly p99Us: number
  readonly errors: number
  readonly admitted: number
  readonly primaryCpuUs: number
  readonly workerCpuUs: number
}

function inChild(run: Run): Promise<Summary> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...process.execArgv, self, '--run', JSON.stringify(run)],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    let err = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
    // A run that hangs (a worker that never reports) is killed: its cell fails, the rest go on.
    const timer = setTimeout(() => child.kill('SIGKILL'), (run.seconds + 60) * 1000)
    child.on('error', reject)
    // 'close', not 'exit': every byte of its output has been read by then.
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      const line = out.split('\n').find((l) => l.startsWith('SUMMARY '))
      if (line === undefined) {
        reject(new Error(`run exited with ${code ?? signal}: ${err.trim() || out.trim()}`))
      } else resolve(JSON.parse(line.slice(8)) as Summary)
    })
  })
}

async function primary(run: Run): Promise<void> {
  if (run.contender === 'rlf RateLimiterCluster') new RateLimiterClusterMaster()
  else if (run.contender === 'IPC round trip') {
    cluster.on('message', (from, message: { ping?: number }) => {
      if (message?.ping !== undefined) from.send({ pong: message.ping })
    })
  } else clusterStore()
  const workers = Array.from({ length: run.workers }, () =>
    cluster.fork({ BENCH_RUN: JSON.stringify(run) }),
  )
  let primaryCpu = { user: 0, system: 0 }
  let started: NodeJS.CpuUsage | undefined
  const reports = await Promise.all(
    workers.map(
      (w) =>
        new Promise<WorkerReport>((resolve) =>
          w.on('message', (m: { measuring?: true; report?: WorkerReport }) => {
            // The primary's CPU is counted from the first worker's start of measuring.
            if (m?.measuring === true && started === undefined) started = process.cpuUsage()
            if (m?.report !== undefined) {
              if (primaryCpu.user === 0 && started !== undefined) {
                primaryCpu = process.cpuUsage(started)
              }
              resolve(m.report)
            }
          }),
        ),
    ),
  )
  const counts = new Map<number, number>()
  for (const r of reports)
    for (const [us, n] of r.histogram) counts.set(us, (counts.get(us) ?? 0) + n)
  const sorted = [...counts].sort((a, b) => a[0] - b[0])
  const total = sorted.reduce((sum, [, n]) => sum + n, 0)
  const at = (q: number) => {
    let seen = 0
    for (const [us, n] of sorted) {
      seen += n
      if (seen >= q * total) return us
    }
    return 0
  }
  const decisions = reports.reduce((sum, r) => sum + r.decisions, 0)
  const summary: Summary = {
    perSecond: reports.reduce((sum, r) => sum + r.decisions / r.seconds, 0),
    p50Us: at(0.5),
    p99Us: at(0.99),
    errors: reports.reduce((sum, r) => sum + r.errors, 0),
    admitted: reports.reduce((sum, r) => sum + r.admitted, 0),
    primaryCpuUs: (primaryCpu.user + primaryCpu.system) / decisions,
    workerCpuUs: reports.reduce((sum, r) => sum + r.cpuUs, 0) / decisions,
  }
  process.stdout.write(`SUMMARY ${JSON.stringify(summary)}\n`)
  for (const w of workers) w.process.kill()
  process.exit(0)
}

async function worker(run: Run): Promise<void> {
  let decide: () => Promise<boolean>
  if (run.contender === 'rlf RateLimiterCluster') {
    const limiter = new RateLimiterCluster({
      keyPrefix: 'bench',
      points: run.limit,
      duration: 3600,
      timeoutMs: 1000,
    })
    decide = () =>
      limiter.consume('hot').then(
        () => true,
        (error: unknown) => {
          if (error instanceof Error) throw error
          return false
        },
      )
  } else if (run.contender === 'IPC round trip') {
    let seq = 0
    const waiting = new Map<number, () => void>()
    process.on('message', (message: { pong?: number }) => {
      if (message?.pong === undefined) return
      waiting.get(message.pong)?.()
      waiting.delete(message.pong)
    })
    decide = () =>
      new Promise<boolean>((resolve) => {
        const id = ++seq
        waiting.set(id, () => resolve(true))
        process.send!({ ping: id })
      })
  } else {
    const store = clusterStore(run.contender === 'sluice leased' ? { lease: LEASE } : {})
    const limiter = keyedLimiter({ name: 'bench', limit: run.limit, window: '1h', store })
    decide = async () => (await limiter.consume('hot')).allowed
  }
  // Let the primary see every worker before measuring (RateLimiterCluster's init message).
  await new Promise((resolve) => setTimeout(resolve, 200))

  let decisions = 0
  let admitted = 0
  let errors = 0
  let measuring = run.attempts !== undefined
  let launched = 0
  // Whole microseconds up to 100 ms; slower decisions count in the last bucket.
  const histogram = new Uint32Array(100_001)
  let started = performance.now()
  let cpu = process.cpuUsage()
  const deadline = () =>
    run.attempts !== undefined
      ? launched++ >= run.attempts
      : performance.now() - started >= run.seconds * 1000
  if (run.attempts === undefined) {
    setTimeout(() => {
      measuring = true
      started = performance.now()
      cpu = process.cpuUsage()
      decisions = 0
      process.send!({ measuring: true })
    }, WARM_UP_MS)
  } else process.send!({ measuring: true })
  await Promise.all(
    Array.from({ length: run.inFlight }, async () => {
      while (!measuring || !deadline()) {
        const t0 = performance.now()
        try {
          if (await decide()) admitted++
        } catch {
          errors++
        }
        if (measuring) {
          decisions++
          histogram[Math.min(100_000, Math.floor((performance.now() - t0) * 1000))]!++
        }
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  const buckets: [number, number][] = []
  histogram.forEach((n, us) => {
    if (n !== 0) buckets.push([us, n])
  })
  const report: WorkerReport = {
    decisions,
    admitted,
    errors,
    seconds,
    cpuUs: used.user + used.system,
    histogram: buckets,
  }
  process.send!({ report })
}

// Last: every helper above is initialized by now.
if (cluster.isWorker) await worker(JSON.parse(process.env.BENCH_RUN!) as Run)
else if (runArg !== -1) await primary(JSON.parse(process.argv[runArg + 1]!) as Run)
else await main()
