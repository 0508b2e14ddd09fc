/**
 * Quota leases against exact stores and the peers (issue 27), in one run on one
 * redis-server the bench starts on a free port:
 *
 * 1. One process, 200 decisions in flight, hot key and 10,000 keys: decisions/s, p99 and
 *    Redis commands per 1,000 decisions (INFO commandstats, every command counted) for
 *    sluice with `lease: {}` (defaults), sluice exact, rate-limiter-flexible
 *    `RateLimiterRedis` and rate-limit-redis. The limit (a billion per hour) is never reached.
 * 2. 1, 4 and 10 processes on one key at twice the limit (fixed window 50,000 per 2 s,
 *    default lease): admitted per window against limit + stated bound, commands per 1,000.
 * 3. docs/leases.svg: a ManualClock simulation of 10 leased processes at twice the limit of a
 *    sliding window, admitted per rolling window against the limit and limit + N × B.
 *
 * Usage: pnpm bench:leases [seconds per cell, default 2]
 */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ManualClock } from '@sluice/core'
import { memoryStore, type TakeResult, withLeases } from '@sluice/keyed'
import { compilePolicy } from '@sluice/keyed/store'
import { redisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis'
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { startRedisServer } from '../../../packages/redis/test/redis-server'
import { escapeXml, polylines, rule } from '../svg'

const SECONDS = Number(process.argv[2] ?? 2)
const IN_FLIGHT = 200
const RATE = { limit: 1_000_000_000, windowMs: 3_600_000 }
const log = (line: string) => process.stdout.write(`${line}\n`)

type Decide = (key: string) => Promise<boolean>

async function connect(port: number): Promise<Redis> {
  const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false })
  client.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve)
    client.once('end', () => reject(new Error('connection ended')))
  })
  return client
}

const contenders: { label: string; open(client: Redis): Decide }[] = [
  {
    label: 'sluice redisStore lease: {} (fixed window)',
    open: (client) => {
      const store = redisStore({ client, prefix: `l${Math.random()}:`, lease: {} })
      const p = [
        compilePolicy(
          { algorithm: 'fixed-window', limit: RATE.limit, window: RATE.windowMs },
          'bench',
        ),
      ]
      return async (key) => (await store.take(key, p, 1)).allowed
    },
  },
  {
    label: 'sluice redisStore lease: {} (token bucket)',
    open: (client) => {
      const store = redisStore({ client, prefix: `t${Math.random()}:`, lease: {} })
      const p = [
        compilePolicy(
          { algorithm: 'token-bucket', limit: RATE.limit, window: RATE.windowMs },
          'bench',
        ),
      ]
      return async (key) => (await store.take(key, p, 1)).allowed
    },
  },
  {
    label: 'sluice redisStore exact (fixed window)',
    open: (client) => {
      const store = redisStore({ client, prefix: `e${Math.random()}:` })
      const p = [
        compilePolicy(
          { algorithm: 'fixed-window', limit: RATE.limit, window: RATE.windowMs },
          'bench',
        ),
      ]
      return async (key) => (await store.take(key, p, 1)).allowed
    },
  },
  {
    label: 'rate-limiter-flexible RateLimiterRedis',
    open: (client) => {
      const limiter = new RateLimiterRedis({
        storeClient: client,
        points: RATE.limit,
        duration: RATE.windowMs / 1000,
        keyPrefix: `rlflx${Math.random()}`,
      })
      return async (key) => {
        await limiter.consume(key, 1)
        return true
      }
    },
  },
  {
    label: 'rate-limit-redis RedisStore.increment',
    open: (client) => {
      const store = new RateLimitRedisStore({
        sendCommand: (command: string, ...args: string[]) =>
          client.call(command, ...args) as Promise<never>,
        prefix: `rl${Math.random()}:`,
      })
      store.init({ windowMs: RATE.windowMs } as Parameters<typeof store.init>[0])
      return async (key) => (await store.increment(key)).totalHits <= RATE.limit
    },
  },
]

/**
 * Store calls Redis has answered so far: script calls (EVAL, EVALSHA and their _RO forms) in
 * INFO commandstats. Every contender makes its decisions, blocks and refunds through
 * scripts; the commands a script runs inside are counted by Redis too, and left out here.
 */
async function commands(client: Redis): Promise<number> {
  const info = String(await client.info('commandstats'))
  let total = 0
  for (const [, , calls] of info.matchAll(
    /cmdstat_(eval|evalsha|eval_ro|evalsha_ro):calls=(\d+)/g,
  )) {
    total += Number(calls)
  }
  return total
}

async function throughput(port: number, keys: number) {
  const rows = []
  for (const contender of contenders) {
    const client = await connect(port)
    const admin = await connect(port)
    const decide = contender.open(client)
    // Warm up: scripts loaded, first blocks taken.
    await Promise.all(Array.from({ length: IN_FLIGHT }, (_, i) => decide(`k${i % keys}`)))
    const latencies: number[] = []
    const before = await commands(admin)
    const end = performance.now() + SECONDS * 1000
    let decisions = 0
    let seq = 0
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (performance.now() < end) {
          const key = keys === 1 ? 'hot' : `k${seq++ % keys}`
          const start = performance.now()
          await decide(key)
          latencies.push(performance.now() - start)
          decisions++
        }
      }),
    )
    const calls = (await commands(admin)) - before
    latencies.sort((a, b) => a - b)
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? Number.NaN
    rows.push({
      label: contender.label,
      perSecond: decisions / SECONDS,
      p99,
      per1000: (1000 * calls) / decisions,
    })
    await client.quit()
    await admin.quit()
  }
  return rows
}

const WORKER = fileURLToPath(
  new URL('../../../packages/redis/test/lease-worker.ts', import.meta.url),
)
const TSX = fileURLToPath(new URL('../../../node_modules/.bin/tsx', import.meta.url))
const MP = { limit: 50_000, windowMs: 2_000, windows: 3 }

async function processes(port: number, n: number) {
  const prefix = `mp${n}:${Math.random()}:`
  let ready = 0
  let go: () => void = () => {}
  const allReady = new Promise<void>((resolve) => {
    go = resolve
  })
  const reports = await Promise.all(
    Array.from({ length: n }, () => {
      const child = spawn(
        TSX,
        [
          '--conditions=@sluice/source',
          WORKER,
          String(port),
          prefix,
          'fixed-window',
          String(MP.limit),
          String(MP.windowMs),
          String((2 * MP.limit) / n),
          String(MP.windows),
        ],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      )
      let out = ''
      return new Promise<{
        admitted: Record<string, number>
        decisions: number
        calls: number
        straddling: number
      }>((resolve, reject) => {
        child.stdout.on('data', (data) => {
          out += String(data)
          if (out === 'ready\n' && ++ready === n) go()
        })
        void allReady.then(() =>
          child.stdin.write(`${(Math.floor(Date.now() / MP.windowMs) + 1) * MP.windowMs}\n`),
        )
        child.on('exit', (code) =>
          code === 0 ? resolve(JSON.parse(out.slice(6))) : reject(new Error(`worker ${code}`)),
        )
      })
    }),
  )
  const perWindow = new Map<number, number>()
  let decisions = 0
  let calls = 0
  let straddling = 0
  for (const report of reports) {
    decisions += report.decisions
    calls += report.calls
    straddling += report.straddling
    for (const [w, c] of Object.entries(report.admitted))
      perWindow.set(Number(w), (perWindow.get(Number(w)) ?? 0) + c)
  }
  const worst = Math.max(...perWindow.values())
  return {
    n,
    decisions,
    per1000: (1000 * calls) / decisions,
    worst,
    overshoot: Math.max(0, worst - MP.limit),
    straddling,
    windows: [...perWindow.values()],
  }
}

/** docs/leases.svg: 10 leased processes at twice a sliding window's limit, on a ManualClock. */
function chart(): { worst: number; bound: number } {
  const N = 10
  const limit = 10_000
  const windowMs = 1_000
  const B = Math.floor(0.001 * limit)
  const clock = new ManualClock(0)
  const shared = memoryStore({ clock })
  const policy = compilePolicy(
    { algorithm: 'sliding-window', limit, window: windowMs, slots: 10 },
    'chart',
  )
  const stores = Array.from({ length: N }, () => withLeases(shared, { clock }))
  const tickMs = 10
  const ticks = 1000
  const admittedPerTick: number[] = []
  // Offered: 2 × limit per window, in bursts of uneven size per process.
  for (let tick = 0; tick < ticks; tick++) {
    let admitted = 0
    for (let p = 0; p < N; p++) {
      const burst = Math.round(
        ((2 * limit) / (windowMs / tickMs) / N) * (0.5 + ((p * 7 + tick * 3) % 10) / 9),
      )
      for (let k = 0; k < burst; k++)
        if ((stores[p]!.take('hot', [policy], 1) as TakeResult).allowed) admitted++
    }
    admittedPerTick.push(admitted)
    clock.advance(tickMs)
    for (const store of stores) store.expire()
  }
  // Rolling admitted over the last window (slots + 1 = 11 generations of 100 ms = 110 ticks).
  const span = 110
  const rolling = admittedPerTick.map((_, i) =>
    i + 1 < span
      ? Number.NaN
      : admittedPerTick.slice(i + 1 - span, i + 1).reduce((a, b) => a + b, 0),
  )
  const bound = limit + N * B
  const worst = Math.max(...rolling.filter(Number.isFinite))
  const height = 220
  const top = 30
  // Zoomed on the top of the range: 9,700 to 10,200 admitted per window.
  const low = limit - 300
  const high = bound + 100
  const y = (v: number) => top + height - ((v - low) / (high - low)) * height
  const axis = { left: 60, step: 0.75 }
  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${axis.left + ticks * axis.step + 150}" height="${height + 70}" font-family="sans-serif" font-size="11">`,
    `<title>Quota leases: admitted per window by 10 leased processes against the limit and the stated bound</title>`,
    `<text x="${axis.left}" y="18" fill="#212529">${escapeXml(`Quota leases: 10 processes at 2× a sliding window (10,000 per 1 s, default share 0.001, ttl 1 s); admitted per window (11 slots)`)}</text>`,
    rule(axis, y(limit), ticks, '#495057', false),
    `<text x="${axis.left + ticks * axis.step + 4}" y="${(y(limit) + 12).toFixed(1)}" fill="#495057">limit 10,000</text>`,
    rule(axis, y(bound), ticks, '#e03131', true),
    `<text x="${axis.left + ticks * axis.step + 4}" y="${(y(bound) - 2).toFixed(1)}" fill="#e03131">limit + N × B = ${bound}</text>`,
    ...polylines(axis, rolling, y, '#1098ad'),
    `<text x="${axis.left}" y="${height + top + 30}" fill="#495057">${escapeXml(`simulated time 0–10 s (ManualClock, one memory store as the shared store); worst window ${worst}`)}</text>`,
    `<text x="${axis.left - 6}" y="${(y(low) + 4).toFixed(1)}" text-anchor="end" fill="#495057">${low}</text>`,
    `<text x="${axis.left - 6}" y="${(y(high) + 4).toFixed(1)}" text-anchor="end" fill="#495057">${high}</text>`,
    '</svg>',
  ].join('\n')
  writeFileSync(fileURLToPath(new URL('../../../docs/leases.svg', import.meta.url)), `${svg}\n`)
  return { worst, bound }
}

const server = await startRedisServer()
try {
  log(
    `leases bench: one redis-server on port ${server.port}, ${SECONDS} s per cell, ${IN_FLIGHT} in flight`,
  )
  for (const keys of [1, 10_000]) {
    log(`\n## one process, ${keys === 1 ? 'hot key' : '10,000 keys'}`)
    log('| contender | decisions/s | p99 ms | Redis commands per 1,000 decisions |')
    log('| --- | ---: | ---: | ---: |')
    for (const row of await throughput(server.port, keys)) {
      log(
        `| ${row.label} | ${Math.round(row.perSecond).toLocaleString('en-US')} | ${row.p99.toFixed(3)} | ${row.per1000.toFixed(1)} |`,
      )
    }
  }
  log(
    `\n## processes on one key at 2× the limit (fixed window ${MP.limit} per ${MP.windowMs} ms, default lease; bound 0)`,
  )
  log(
    '| processes | decisions | worst window admitted | overshoot | stated bound | commands per 1,000 | Redis answers straddling a window edge (not counted) |',
  )
  log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const n of [1, 4, 10]) {
    const r = await processes(server.port, n)
    log(
      `| ${n} | ${r.decisions} | ${r.worst} | ${r.overshoot} | 0 | ${r.per1000.toFixed(1)} | ${r.straddling} |`,
    )
  }
  const { worst, bound } = chart()
  log(
    `\ndocs/leases.svg written: simulated sliding window, worst rolling window ${worst} ≤ limit + N × B = ${bound}`,
  )
} finally {
  await server.stop()
}
