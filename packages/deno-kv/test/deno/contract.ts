/**
 * Inside Deno: the store contract against a Deno KV database in memory, on a ManualClock
 * the contract advances, results written for the Node side (deno-kv.test.ts).
 */
import { ManualClock } from '@sluice/core'
import { runStoreContract } from '@sluice/http/testing'
import { runAndWrite } from '../../../hono/test/runtimes/vitest-shim'
import { denoKvStore } from '../../src/index'

const clock = new ManualClock(Date.now())
const kv = await Deno.openKv(':memory:')
let stores = 0

runStoreContract(
  'denoKvStore (Deno KV, ManualClock)',
  () => denoKvStore({ kv, prefix: ['contract', ++stores], clock }),
  { advance: (ms) => clock.advance(ms) },
)

const encoder = new TextEncoder()
await runAndWrite(async (line) => {
  const bytes = encoder.encode(line)
  let written = 0
  while (written < bytes.length) written += await Deno.stdout.write(bytes.subarray(written))
})
kv.close()
