/**
 * `pnpm --filter @sluice/bench bench:priority-http`: the simulation's shape on real
 * sockets, in about 20 s. An Express server in a child process (its own core) runs
 * `bulkhead({ max: 16 })` around a handler that answers after 50 ms: 320 requests per
 * second at most (slower than the simulation's 10 ms, so that a shared machine's CPU is
 * not what limits it).
 * autocannon sends critical requests (`x-priority: critical`) at half that throughout and,
 * for the surge, sheddable ones at three times it, first without the surge (the baseline
 * critical p99), then with it for each bulkhead variant. Prints a markdown table.
 */
import autocannon from 'autocannon'
import { Child } from '../child'
import { percentile } from '../stats'
import { CHECK, type CheckVariant } from './http-variants'

const CAPACITY_PER_S = (CHECK.max / CHECK.serviceMs) * 1000
const SECONDS = 4

interface ClassOutcome {
  readonly sent: number
  readonly ok: number
  readonly p50Ms: number
  readonly p99Ms: number
}

/** One autocannon instance for one class; latency of its 2xx answers from each response's timing. */
function drive(port: number, priority: string, rate: number, connections: number) {
  const latencies: number[] = []
  let sent = 0
  const done = new Promise<ClassOutcome>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}/`,
        headers: { 'x-priority': priority },
        connections,
        overallRate: rate,
        duration: SECONDS,
      },
      (error) => {
        if (error) reject(error)
        else {
          resolve({
            sent,
            ok: latencies.length,
            p50Ms: percentile(latencies, 50),
            p99Ms: percentile(latencies, 99),
          })
        }
      },
    )
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      sent++
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime)
    })
  })
  return done
}

async function run(variant: CheckVariant, surge: boolean) {
  const server = await Child.start(
    'priority/http-server.ts',
    [JSON.stringify({ variant })],
    'listening',
  )
  try {
    const port = server.ready.port as number
    const [critical, sheddable] = await Promise.all([
      drive(port, 'critical', CAPACITY_PER_S / 2, 64),
      surge ? drive(port, 'sheddable', CAPACITY_PER_S * 3, 96) : undefined,
    ])
    return { critical, sheddable }
  } finally {
    await server.close()
  }
}

const started = performance.now()
const calm = await run('none', false)
const rows: string[] = []
const pct = (o: ClassOutcome | undefined) =>
  o === undefined || o.sent === 0 ? 'n/a' : `${((100 * o.ok) / o.sent).toFixed(2)} %`
const perCapacity = (o: ClassOutcome | undefined) =>
  o === undefined ? 'n/a' : (o.ok / SECONDS / CAPACITY_PER_S).toFixed(3)
for (const variant of Object.keys(CHECK.variants) as CheckVariant[]) {
  const { critical, sheddable } = await run(variant, true)
  rows.push(
    `| ${variant} | ${pct(critical)} | ${critical.p50Ms.toFixed(1)} / ${critical.p99Ms.toFixed(1)} | ${(critical.p99Ms / calm.critical.p99Ms).toFixed(2)} | ${perCapacity(critical)} + ${perCapacity(sheddable)} | ${pct(sheddable)} |`,
  )
}
console.log(
  [
    `Loopback, Express, \`bulkhead({ max: ${CHECK.max} })\` around a ${CHECK.serviceMs} ms handler (${CAPACITY_PER_S} requests/s); critical at ${CAPACITY_PER_S / 2}/s, sheddable surge at ${CAPACITY_PER_S * 3}/s, ${SECONDS} s per run; critical p99 without the surge: ${calm.critical.p99Ms.toFixed(1)} ms.`,
    '',
    '| bulkhead | critical answered 2xx | critical p50 / p99 (ms) | p99 ÷ without surge | 2xx per s ÷ capacity: critical + sheddable | sheddable answered 2xx |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n'),
)
console.error(`took ${((performance.now() - started) / 1000).toFixed(1)} s`)
