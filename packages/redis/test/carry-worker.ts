/**
 * One application process of the rolling-deploy test (carry.deploy.test.ts): one spec of
 * the policy named `api` (its own limit, the other process has the other), hammering the
 * same client keys as the other process, with a few takes always in flight, from the
 * time its parent writes to stdin (once it printed `ready`) for `durationMs`. For a
 * window it prints, per key and window (the window Redis counted the take in: its
 * receipt), how many it admitted, and per key the receipts (window, or slot) of the takes
 * that left exactly one permit used: those that found a fresh budget. For a token bucket
 * it prints, per key, the time of every take it admitted, and of those that found the
 * bucket full (a fresh budget: one permit gone after it).
 *
 * A token bucket decides on this machine's clock (the store's `clock` option: each call
 * sends the time it is decided at), read by both processes: a window's receipt says when
 * it counted a take, a bucket's (its arrival time) does not.
 *
 * Args: port prefix algorithm limit windowMs slots durationMs keys carry
 */
import type { Carry } from '@sluice/core'
import { compilePolicy, withCarry } from '@sluice/keyed/store'
import { Redis } from 'ioredis'
import { redisStore } from '../src/index'

const [port, prefix, algorithm, limit, windowMs, slots, durationMs, keys, carry] =
  process.argv.slice(2)
const client = new Redis({ host: '127.0.0.1', port: Number(port) })
const bucket = algorithm === 'token-bucket'
/** The time of the take being sent: the store reads its clock once per call, as it sends it. */
let sentAt = 0
const clock = {
  now: () => {
    sentAt = Date.now()
    return sentAt
  },
  sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
}
const store = redisStore({
  client,
  prefix: prefix!,
  timeout: '10s',
  onError: 'deny',
  ...(bucket ? { clock } : {}),
})
const spec =
  algorithm === 'sliding-window'
    ? ({ algorithm, limit: Number(limit), window: Number(windowMs), slots: Number(slots) } as const)
    : bucket
      ? ({ algorithm, limit: Number(limit), window: Number(windowMs) } as const)
      : ({ algorithm: 'fixed-window', limit: Number(limit), window: Number(windowMs) } as const)
const policy = withCarry(compilePolicy({ ...spec, name: 'api' }, 'carry-worker'), carry as Carry)
const IN_FLIGHT = 4

/**
 * Per `<key>|<window>`: admitted (a window), or per key the times admitted (a bucket). Per
 * key: the receipts (a window) or times (a bucket) of takes onto a fresh budget.
 */
const admitted: Record<string, number> = {}
const times: Record<string, number[]> = {}
const fresh: Record<string, number[]> = {}
let decisions = 0
let refused = 0

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
await client.ping()
process.stdout.write('ready\n')
const startAt = await new Promise<number>((resolve) => {
  process.stdin.once('data', (data) => resolve(Number(String(data).trim())))
})
process.stdin.pause()
await sleep(startAt - Date.now())
const end = startAt + Number(durationMs)
const windowOf = (receipt: number) =>
  // A fixed window's receipt is its window; a sliding window's its slot (generation).
  algorithm === 'sliding-window' ? Math.floor(receipt / Number(slots)) : receipt

async function hammer(lane: number): Promise<void> {
  let i = lane
  while (Date.now() < end) {
    const key = `k${i++ % Number(keys)}`
    const taking = store.take(key, [policy], 1)
    const at = sentAt
    const { allowed, results } = await taking
    decisions++
    if (!allowed) {
      refused++
      continue
    }
    const result = results[0]!
    const fromFull = result.limit - result.remaining === 1
    if (bucket) {
      times[key] = [...(times[key] ?? []), at]
      if (fromFull) fresh[key] = [...(fresh[key] ?? []), at]
      continue
    }
    const window = `${key}|${windowOf(result.receipt!)}`
    admitted[window] = (admitted[window] ?? 0) + 1
    if (fromFull) fresh[key] = [...(fresh[key] ?? []), result.receipt!]
  }
}

await Promise.all(Array.from({ length: IN_FLIGHT }, (_, lane) => hammer(lane)))
process.stdout.write(`${JSON.stringify({ admitted, times, fresh, decisions, refused })}\n`)
await client.quit()
