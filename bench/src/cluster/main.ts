// The cluster store against rate-limiter-flexible's RateLimiterCluster: 4 node:cluster
// workers deciding on one hot key through the primary, each with 1 and with 50 decisions
// in flight; decisions/s over all workers and the decision latency's p50/p99 (from the
// call to its answer). Plus one exactness run: 4 workers at 2× the limit.
//
//   pnpm --filter @sluice/bench bench:cluster        (BENCH_CLUSTER_SECONDS, default 3)
//
// Each run is a fresh primary process (this file with `--run <json>`), so contenders never
// share a primary's event loop.
import { spawn } from 'node:child_process'
import cluster from 'node:cluster'
import { fileURLToPath } from 'node:url'
import { clusterStore } from '@sluice/cluster'
import { keyedLimiter } from '@sluice/keyed'
import { RateLimiterCluster, RateLimiterClusterMaster } from 'rate-limiter-flexible'

type Contender = 'sluice exact' | 'sluice leased' | 'rlf RateLimiterCluster'

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
  /** Decisions per whole microsecond of latency, [µs, count] for the non-empty ones. */
  readonly histogram: [number, number][]
}

const WORKERS = 4
const SECONDS = Number(process.env.BENCH_CLUSTER_SECONDS ?? 3)
const WARM_UP_MS = 500
/** Never reached in a timed run: every decision is an admission, so all contenders do the same work. */
const BIG_LIMIT = 1_000_000_000
/** A block of 10,000 permits (share × limit), renewed every second at most. */
const LEASE = { share: 0.00001, ttl: '1s' } as const

const self = fileURLToPath(import.meta.url)
const runArg = process.argv.indexOf('--run')

if (cluster.isWorker) await worker(JSON.parse(process.env.BENCH_RUN!) as Run)
else if (runArg !== -1) await primary(JSON.parse(process.argv[runArg + 1]!) as Run)
else await main()

async function main(): Promise<void> {
  const runs: Run[] = []
  for (const contender of ['sluice exact', 'sluice leased', 'rlf RateLimiterCluster'] as const) {
    for (const inFlight of [1, 50]) {
      runs.push({ contender, inFlight, workers: WORKERS, seconds: SECONDS, limit: BIG_LIMIT })
    }
  }
  const exactness: Run = {
    contender: 'sluice exact',
    inFlight: 50,
    workers: WORKERS,
    seconds: 0,
    attempts: 5_000,
    limit: 10_000,
  }
  console.log(`node ${process.version}, ${WORKERS} workers, ${SECONDS} s per run, one hot key`)
  for (const run of runs) {
    const result = await inChild(run)
    const row = `${run.contender.padEnd(24)} ${String(run.inFlight).padStart(3)} in flight/worker  ${Math.round(
      result.perSecond,
    )
      .toLocaleString('en-US')
      .padStart(10)} decisions/s  p50 ${result.p50Us.toFixed(0).padStart(6)} µs  p99 ${result.p99Us
      .toFixed(0)
      .padStart(6)} µs  errors ${result.errors}`
    console.log(row)
  }
  const exact = await inChild(exactness)
  console.log(
    `exactness: ${WORKERS} workers × ${exactness.attempts} attempts at limit ${exactness.limit}: admitted ${exact.admitted}`,
  )
}

interface Summary {
  readonly perSecond: number
  readonly p50Us: number
  readonly p99Us: number
  readonly errors: number
  readonly admitted: number
}

function inChild(run: Run): Promise<Summary> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...process.execArgv, self, '--run', JSON.stringify(run)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('SUMMARY '))
      if (line === undefined) reject(new Error(`run exited ${code}: ${out}`))
      else resolve(JSON.parse(line.slice(8)) as Summary)
    })
  })
}

async function primary(run: Run): Promise<void> {
  if (run.contender === 'rlf RateLimiterCluster') new RateLimiterClusterMaster()
  else clusterStore()
  const workers = Array.from({ length: run.workers }, () =>
    cluster.fork({ BENCH_RUN: JSON.stringify(run) }),
  )
  const reports = await Promise.all(
    workers.map(
      (w) =>
        new Promise<WorkerReport>((resolve) =>
          w.on('message', (m: { report?: WorkerReport }) => {
            if (m?.report !== undefined) resolve(m.report)
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
  const summary: Summary = {
    perSecond: reports.reduce((sum, r) => sum + r.decisions / r.seconds, 0),
    p50Us: at(0.5),
    p99Us: at(0.99),
    errors: reports.reduce((sum, r) => sum + r.errors, 0),
    admitted: reports.reduce((sum, r) => sum + r.admitted, 0),
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
  const deadline = () =>
    run.attempts !== undefined
      ? launched++ >= run.attempts
      : performance.now() - started >= run.seconds * 1000
  if (run.attempts === undefined) {
    setTimeout(() => {
      measuring = true
      started = performance.now()
      decisions = 0
    }, WARM_UP_MS)
  }
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
  const buckets: [number, number][] = []
  histogram.forEach((n, us) => {
    if (n !== 0) buckets.push([us, n])
  })
  process.send!({ report: { decisions, admitted, errors, seconds, histogram: buckets } })
}
