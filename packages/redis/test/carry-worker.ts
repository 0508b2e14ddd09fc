/**
 * One application process of the rolling-deploy test (carry.deploy.test.ts): one spec of
 * the policy named `api` (its own limit, the other process has the other), hammering the
 * same client keys as the other process, with a few takes always in flight, from the
 * time its parent writes to stdin (once it printed `ready`) for `durationMs`. It prints,
 * per key and window (the window Redis counted the take in: its receipt), how many it
 * admitted, and per key the receipts (window, or slot) of the takes that left exactly one
 * permit used: those that found a fresh budget.
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
const store = redisStore({ client, prefix: prefix!, timeout: '10s', onError: 'deny' })
const spec =
  algorithm === 'sliding-window'
    ? ({ algorithm, limit: Number(limit), window: Number(windowMs), slots: Number(slots) } as const)
    : ({ algorithm: 'fixed-window', limit: Number(limit), window: Number(windowMs) } as const)
const policy = withCarry(compilePolicy({ ...spec, name: 'api' }, 'carry-worker'), carry as Carry)
const IN_FLIGHT = 4

/** Per `<key>|<window>`: admitted. Per key: the receipts of takes onto a fresh budget. */
const admitted: Record<string, number> = {}
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
    const { allowed, results } = await store.take(key, [policy], 1)
    decisions++
    if (!allowed) {
      refused++
      continue
    }
    const result = results[0]!
    const at = `${key}|${windowOf(result.receipt!)}`
    admitted[at] = (admitted[at] ?? 0) + 1
    if (result.limit - result.remaining === 1) fresh[key] = [...(fresh[key] ?? []), result.receipt!]
  }
}

await Promise.all(Array.from({ length: IN_FLIGHT }, (_, lane) => hammer(lane)))
process.stdout.write(`${JSON.stringify({ admitted, fresh, decisions, refused })}\n`)
await client.quit()
