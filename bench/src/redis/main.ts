/**
 * `pnpm bench:redis`: the Redis store against rate-limiter-flexible and rate-limit-redis
 * on one redis-server it starts itself; writes its section of bench/RESULTS.md, leaving
 * the rest of the file as `pnpm bench` wrote it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { describeMachine } from '../machine'
import { REDIS_SECTION_END, REDIS_SECTION_START, renderRedisSection } from './report'
import { REDIS_ONLY, runRedisBench } from './run'

const RESULTS = fileURLToPath(new URL('../../RESULTS.md', import.meta.url))

async function main(): Promise<void> {
  const machine = describeMachine()
  const when = new Date()
  console.log(`sluice bench:redis: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}`)
  const result = await runRedisBench((line) => console.log(line))
  const section = renderRedisSection(result, {
    writtenBy: 'pnpm bench:redis',
    when,
    machine: `${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, load average ${machine.loadAverage.toFixed(2)} at start and ${(os.loadavg()[0] ?? 0).toFixed(2)} at end`,
  })
  if (REDIS_ONLY !== undefined) {
    console.log(
      `\n${section}\n(BENCH_REDIS_SCENARIOS set: a partial run, RESULTS.md left as it is)`,
    )
    return
  }
  const current = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : '# sluice benchmarks\n'
  const start = current.indexOf(REDIS_SECTION_START)
  const end = current.indexOf(REDIS_SECTION_END)
  const next =
    start !== -1 && end > start
      ? current.slice(0, start) + section + current.slice(end + REDIS_SECTION_END.length)
      : `${current.trimEnd()}\n\n${section}\n`
  writeFileSync(RESULTS, next)
  console.log(`\nWrote the Redis section of ${RESULTS}`)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
