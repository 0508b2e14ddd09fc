/**
 * Inside Deno, one process of a rolling deploy on one KV file: its policy "rolling" is a
 * fixed window of `limit` per hour (the old or the new spec of one name); it takes `count`
 * permits at once on one key and prints how many it got (deno-kv.test.ts).
 */
import { compilePolicy } from '@sluice/keyed/store'
import { denoKvStore } from '../../src/index'

const [path, key, limit, count] = Deno.args as [string, string, string, string]
const kv = await Deno.openKv(path)
const store = denoKvStore({ kv, attempts: 100 })
const policy = compilePolicy(
  { name: 'rolling', algorithm: 'fixed-window', limit: Number(limit), window: '1h' },
  'rolling',
)
const taken = await Promise.all(
  Array.from({ length: Number(count) }, () => store.take(key, [policy], 1)),
)
console.log(JSON.stringify({ admitted: taken.filter((t) => t.allowed).length }))
kv.close()
