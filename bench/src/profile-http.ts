/**
 * `pnpm --filter @sluice/bench bench:profile-http <framework> <variant> [baseline]`: CPU
 * profiles of two HTTP apps (default baseline: `headers`, the app writing the same
 * headers) under the same load, and what the variant adds per request, function by
 * function. For working on one adapter.
 */
import { HTTP } from './config'
import { profileUnderLoad, run, startServer } from './http'
import type { Framework, Variant } from './http-apps'
import { compareProfiles } from './profile'

async function main(): Promise<void> {
  const [framework, variant, baseline = 'headers'] = process.argv.slice(2) as [
    Framework,
    Variant,
    Variant?,
  ]
  if (framework === undefined || variant === undefined) {
    throw new Error('usage: bench:profile-http <framework> <variant> [baseline]')
  }
  const base = await startServer(framework, baseline)
  const test = await startServer(framework, variant)
  try {
    await run(base, HTTP.warmup)
    await run(test, HTTP.warmup)
    const a = await profileUnderLoad(base)
    const b = await profileUnderLoad(test)
    const comparison = compareProfiles(a.profile, a.cpuUs, b.profile, b.cpuUs, 30)
    console.log(
      `${framework}: ${baseline} ${a.cpuUs.toFixed(1)} µs/request, ${variant} ${b.cpuUs.toFixed(1)} µs/request`,
    )
    for (const { frame, us } of comparison.added) {
      console.log(`${us >= 0 ? '+' : '−'}${Math.abs(us).toFixed(2).padStart(6)} µs  ${frame}`)
    }
  } finally {
    await Promise.all([base.close(), test.close()])
  }
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
