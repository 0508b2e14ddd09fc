/**
 * `pnpm --filter @sluice/bench bench:profile <contender id> [scenario] [ms]`: one contender's
 * timed loop under the CPU profiler (as the evidence for a missed target is taken),
 * printed as its top functions by self time. For working on one path.
 */
import { DECISION_SCENARIOS } from './config'
import { profileContender } from './decision'

async function main(): Promise<void> {
  const [id, name = 'hot', ms = '2000'] = process.argv.slice(2)
  if (id === undefined) throw new Error('usage: profile <contender id> [scenario] [ms]')
  const scenario = DECISION_SCENARIOS.find((s) => s.name === name)
  if (scenario === undefined) throw new Error(`no scenario "${name}"`)
  const profile = await profileContender(id, scenario, Number(ms))
  console.log(`${id} (${scenario.title}): ${profile.samples} samples`)
  const frames = Object.entries(profile.frames).sort((a, b) => b[1] - a[1])
  for (const [frame, hits] of frames.slice(0, 30)) {
    console.log(`${((100 * hits) / profile.samples).toFixed(1).padStart(5)}%  ${frame}`)
  }
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
