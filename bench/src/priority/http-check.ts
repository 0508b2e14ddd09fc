/**
 * `pnpm --filter @sluice/bench bench:priority-http`: the simulation's shape on real
 * sockets, in about 20 s. An Express server in a child process (its own core) runs
 * `bulkhead({ max: 16 })` around a handler that answers after 50 ms: 320 requests per
 * second at most (slower than the simulation's 10 ms, so that a shared machine's CPU is
 * not what limits it).
 * Critical requests (`x-priority: critical`) arrive at half that throughout and, for the
 * surge, sheddable ones at three times it, first without the surge (the baseline critical
 * p99), then with it for each bulkhead variant. Arrivals are Poisson (seeded), each
 * request sent when it arrives whatever is still in flight (an open loop, as real clients
 * are): autocannon's `overallRate` sends each connection's requests on a shared beat, in
 * bursts that leave the slots idle between them, which no priority can help. Prints a
 * markdown table.
 */
import http from 'node:http'
import { exponential, seededRandom } from '../adaptive/random'
import { Child } from '../child'
import { percentile } from '../stats'
import { CHECK, type CheckVariant } from './http-variants'

const CAPACITY_PER_S = (CHECK.max / CHECK.serviceMs) * 1000
const SECONDS = 4
/** A client gives up on a request after this long (it counts as not answered). */
const CLIENT_TIMEOUT_MS = 2000

interface ClassOutcome {
  readonly sent: number
  readonly ok: number
  readonly p50Ms: number
  readonly p99Ms: number
}

/**
 * Sends `priority` requests at `rate` per second for SECONDS, Poisson arrivals from
 * `seed`, each on a kept-alive socket of its own class; latency of the 2xx answers.
 */
function drive(port: number, priority: string, rate: number, seed: number): Promise<ClassOutcome> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512 })
  const random = seededRandom(seed)
  const latencies: number[] = []
  const answers: Promise<void>[] = []
  let sent = 0
  const send = () => {
    sent++
    const began = performance.now()
    answers.push(
      new Promise<void>((resolve) => {
        const req = http.get(
          { host: '127.0.0.1', port, path: '/', agent, headers: { 'x-priority': priority } },
          (res) => {
            res.resume()
            res.on('end', () => {
              const status = res.statusCode ?? 0
              if (status >= 200 && status < 300) latencies.push(performance.now() - began)
              resolve()
            })
            res.on('error', () => resolve())
          },
        )
        req.setTimeout(CLIENT_TIMEOUT_MS, () => req.destroy())
        req.on('error', () => resolve())
      }),
    )
  }
  const start = performance.now()
  const end = start + SECONDS * 1000
  let next = start + exponential(random, 1000 / rate)
  return new Promise((resolve) => {
    const tick = () => {
      const now = performance.now()
      while (next <= now && next < end) {
        send()
        next += exponential(random, 1000 / rate)
      }
      if (next < end) {
        setTimeout(tick, Math.max(0, next - performance.now()))
        return
      }
      void Promise.all(answers).then(() => {
        agent.destroy()
        resolve({
          sent,
          ok: latencies.length,
          p50Ms: percentile(latencies, 50),
          p99Ms: percentile(latencies, 99),
        })
      })
    }
    tick()
  })
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
      drive(port, 'critical', CAPACITY_PER_S / 2, 29),
      surge ? drive(port, 'sheddable', CAPACITY_PER_S * 3, 290) : undefined,
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
    `Loopback, Express, \`bulkhead({ max: ${CHECK.max} })\` around a ${CHECK.serviceMs} ms handler (${CAPACITY_PER_S} requests/s); Poisson arrivals, an open loop: critical at ${CAPACITY_PER_S / 2}/s, sheddable surge at ${CAPACITY_PER_S * 3}/s, ${SECONDS} s per run, clients giving up after ${CLIENT_TIMEOUT_MS} ms; critical p99 without the surge: ${calm.critical.p99Ms.toFixed(1)} ms.`,
    '',
    '| bulkhead | critical answered 2xx | critical p50 / p99 (ms) | p99 ÷ without surge | 2xx per s ÷ capacity: critical + sheddable | sheddable answered 2xx |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n'),
)
console.error(`took ${((performance.now() - started) / 1000).toFixed(1)} s`)
