/**
 * Inside Deno, one of several processes on one KV file: takes `count` permits at once on
 * one key (and one bulkhead slot), and prints how many it got. Together the processes
 * must get exactly the limit (deno-kv.test.ts).
 */
import { compilePolicy, concurrencyPolicy } from '@sluice/keyed/store'
import { denoKvStore } from '../../src/index'

const [path, key, count] = Deno.args as [string, string, string]
const kv = await Deno.openKv(path)
// 45 takes at once on one key: far more contention than traffic makes, so many attempts.
const store = denoKvStore({ kv, attempts: 100 })
const policies = [
  compilePolicy({ name: 'race', algorithm: 'sliding-window', limit: 25, window: '1h' }, 'race'),
  compilePolicy({ name: 'daily', algorithm: 'token-bucket', limit: 1000, window: '1d' }, 'race'),
]
const slots = concurrencyPolicy('race-slots', 3)
const taken = await Promise.all(
  Array.from({ length: Number(count) }, () => store.take(key, policies, 1)),
)
const held = await Promise.all(
  Array.from({ length: Number(count) }, () => store.take(`${key}-slots`, [slots], 1)),
)
const daily = await store.get(key, policies)
console.log(
  JSON.stringify({
    admitted: taken.filter((t) => t.allowed).length,
    slots: held.filter((t) => t.allowed).length,
    daily: daily[1]?.remaining,
  }),
)
kv.close()
