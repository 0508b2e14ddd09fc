/**
 * One application process of the leases test (and bench): offers `perWindow` decisions
 * per window on one key through `redisStore({ lease })`, paced in 5 ms ticks, from
 * the time its parent writes to stdin (once it printed `ready`) for `windows` windows, and
 * prints what it admitted per window (by the window of the moment it decided) and how many
 * commands it sent to Redis.
 *
 * Args: port prefix algorithm limit windowMs perWindow windows
 */
import type { LeasedStore } from '@sluice/keyed'
import { compilePolicy } from '@sluice/keyed/store'
import { Redis } from 'ioredis'
import { redisStore } from '../src/index'

const [port, prefix, algorithm, limit, windowMs, perWindow, windows] = process.argv.slice(2)
const W = Number(windowMs)
const client = new Redis({ host: '127.0.0.1', port: Number(port) })
let calls = 0
const store = redisStore({
  client: (args: string[]) => {
    calls++
    return client.call(args[0]!, ...args.slice(1))
  },
  prefix: prefix!,
  lease: {},
})
const policy = compilePolicy(
  { algorithm: algorithm as 'fixed-window', limit: Number(limit), window: W, name: 'p' },
  'lease-worker',
)
const TICK = 5
const perTick = Math.max(1, Math.round((Number(perWindow) * TICK) / W))
const admitted: Record<number, number> = {}
let decisions = 0
let straddling = 0

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
await client.ping()
process.stdout.write('ready\n')
const startAt = await new Promise<number>((resolve) => {
  process.stdin.once('data', (data) => resolve(Number(String(data).trim())))
})
process.stdin.pause()
await sleep(startAt - Date.now())
const end = startAt + Number(windows) * W
let next = Date.now()
while (Date.now() < end) {
  const takes: Promise<void>[] = []
  for (let i = 0; i < perTick; i++) {
    // A decision from a block happens inside the call: its window is the call's. One that
    // went to Redis happened between call and answer; when those two fall in different
    // windows it is counted apart (`straddling`), since which window Redis counted it in
    // is not known here (an event loop behind by more than the RTT makes more of them).
    const window = Math.floor(Date.now() / W)
    takes.push(
      Promise.resolve(store.take('hot', [policy], 1)).then((result) => {
        decisions++
        if (!result.allowed) return
        if (Math.floor(Date.now() / W) !== window) straddling++
        else admitted[window] = (admitted[window] ?? 0) + 1
      }),
    )
  }
  await Promise.all(takes)
  next += TICK
  await sleep(next - Date.now())
}
await (store as unknown as LeasedStore).flush()
process.stdout.write(`${JSON.stringify({ admitted, decisions, calls, straddling })}\n`)
await client.quit()
