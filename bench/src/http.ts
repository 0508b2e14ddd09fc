import { Child } from './child'
import { FRAMEWORK_FILTER, HTTP, VARIANT_FILTER } from './config'
import { FRAMEWORKS, type Framework, VARIANTS, type Variant } from './http-apps'
import { type LoadResult, load, probe } from './http-load'
import { compareProfiles, type ProfileComparison, type ProfileSummary } from './profile'
import { pairedRatio, type Summary, summarize } from './stats'

/** One load run, with the server's own CPU time per request it served. */
export interface ServerRun extends LoadResult {
  /** User + system CPU of the server process per 2xx response, µs. */
  readonly cpuUs: number
}

/** One app (framework × variant) over all rounds. */
export interface AppResult {
  readonly framework: Framework
  readonly variant: Variant
  readonly runs: readonly ServerRun[]
  readonly rps: Summary
  readonly p99Ms: Summary
  readonly cpuUs: Summary
  /** Round-by-round req/s relative to the bare app of the same round. */
  readonly vsBare: Summary | undefined
  /** Round-by-round server CPU µs per request above the bare app's. */
  readonly addedCpuUs: Summary | undefined
  /** What a single request got back: the status and the rate-limit headers sent. */
  readonly probe: { status: number; rateLimitHeaders: string[] } | undefined
  /** Non-2xx responses, errors or timeouts over all runs (should be 0). */
  readonly failures: number
  /** Set when the app could not be started (an adapter not built yet, say). */
  readonly error?: string
  /**
   * Taken when sluice missed the overhead target: CPU profiles of the bare and the sluice
   * server under the same load, compared per request.
   */
  readonly profile?: { readonly sluice: ProfileSummary; readonly vsBare: ProfileComparison }
}

/** One load run against a server, with the CPU the server spent on it. */
export async function run(server: Child, seconds: number): Promise<ServerRun> {
  const before = Number((await server.request({ type: 'cpu' }, 'cpu')).us)
  const result = await load(Number(server.ready.port), seconds, HTTP.connections)
  const after = Number((await server.request({ type: 'cpu' }, 'cpu')).us)
  return { ...result, cpuUs: (after - before) / result.responses }
}

/** Profiles a server through one load run. */
export async function profileUnderLoad(
  server: Child,
): Promise<{ profile: ProfileSummary; cpuUs: number }> {
  await server.request({ type: 'profile-start' }, 'profiling')
  const { cpuUs } = await run(server, HTTP.duration)
  const reply = await server.request({ type: 'profile-stop' }, 'profile')
  return { profile: reply.profile as ProfileSummary, cpuUs }
}

export async function startServer(framework: Framework, variant: Variant): Promise<Child> {
  return Child.start('http-server.ts', [JSON.stringify({ framework, variant })], 'listening', {
    timeoutMs: 60_000,
  })
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!
}

/** The variants measured: all, or those `BENCH_VARIANTS` names (bare always, for the ratios). */
function variantsToRun(): readonly Variant[] {
  return VARIANT_FILTER === undefined
    ? VARIANTS
    : VARIANTS.filter((v) => v === 'bare' || VARIANT_FILTER!.includes(v))
}

/**
 * The HTTP overhead of one framework: its bare, headers-only, sluice, peer and bulkhead
 * apps each in a child process, warmed up, then loaded in alternating rounds (bare,
 * headers, sluice, peer, bulkhead, bare, …) so each middleware's ratio to bare, and
 * sluice's to the peer, is taken against a run seconds away.
 */
export async function runFramework(
  framework: Framework,
  log: (line: string) => void,
  options: { profileBelow?: number } = {},
): Promise<AppResult[]> {
  const variants = variantsToRun()
  const servers = new Map<Variant, Child>()
  const errors = new Map<Variant, string>()
  const probes = new Map<Variant, { status: number; rateLimitHeaders: string[] }>()
  try {
    for (const variant of variants) {
      try {
        const server = await startServer(framework, variant)
        servers.set(variant, server)
        const answer = await probe(Number(server.ready.port))
        probes.set(variant, answer)
        if (answer.status !== 200) throw new Error(`answered ${answer.status} to one request`)
        await run(server, HTTP.warmup)
      } catch (error) {
        errors.set(variant, firstLine(error))
        log(`  ${framework}/${variant}: unavailable — ${errors.get(variant)}`)
      }
    }
    const runs = new Map<Variant, ServerRun[]>(variants.map((v) => [v, []]))
    for (let round = 0; round < HTTP.rounds; round++) {
      for (const variant of variants) {
        const server = servers.get(variant)
        if (server === undefined || errors.has(variant)) continue
        runs.get(variant)!.push(await run(server, HTTP.duration))
      }
      const line = variants.map((v) => {
        const last = runs.get(v)!.at(-1)
        return last === undefined
          ? `${v} —`
          : `${v} ${Math.round(last.rps)} req/s ${last.cpuUs.toFixed(1)} µs`
      })
      log(`  ${framework} round ${round + 1}/${HTTP.rounds}: ${line.join(', ')}`)
    }
    const bare = runs.get('bare')!
    const results: AppResult[] = []
    for (const variant of variants) {
      const own = runs.get(variant)!
      const paired = variant !== 'bare' && bare.length > 0 && own.length > 0
      const vsBare = paired
        ? pairedRatio(
            own.map((r) => r.rps),
            bare.map((r) => r.rps),
          )
        : undefined
      const addedCpuUs = paired
        ? summarize(own.map((r, i) => r.cpuUs - bare[Math.min(i, bare.length - 1)]!.cpuUs))
        : undefined
      let profile: AppResult['profile']
      const server = servers.get(variant)
      const bareServer = servers.get('bare')
      if (
        variant === 'sluice' &&
        server !== undefined &&
        bareServer !== undefined &&
        vsBare !== undefined &&
        options.profileBelow !== undefined &&
        vsBare.median < options.profileBelow
      ) {
        log(`  ${framework}: profiling bare and sluice servers under load`)
        const base = await profileUnderLoad(bareServer)
        const test = await profileUnderLoad(server)
        profile = {
          sluice: test.profile,
          vsBare: compareProfiles(base.profile, base.cpuUs, test.profile, test.cpuUs),
        }
      }
      const error = errors.get(variant)
      results.push({
        framework,
        variant,
        runs: own,
        rps: summarize(own.map((r) => r.rps)),
        p99Ms: summarize(own.map((r) => r.p99Ms)),
        cpuUs: summarize(own.map((r) => r.cpuUs)),
        vsBare,
        addedCpuUs,
        probe: probes.get(variant),
        failures: own.reduce((sum, r) => sum + r.failures, 0),
        ...(error === undefined ? {} : { error }),
        ...(profile === undefined ? {} : { profile }),
      })
    }
    return results
  } finally {
    await Promise.all([...servers.values()].map((server) => server.close()))
  }
}

/** Every framework in turn. */
export async function runHttp(
  log: (line: string) => void,
  options: { profileBelow?: number } = {},
): Promise<AppResult[]> {
  const results: AppResult[] = []
  for (const framework of FRAMEWORKS) {
    if (FRAMEWORK_FILTER !== undefined && !FRAMEWORK_FILTER.includes(framework)) continue
    results.push(...(await runFramework(framework, log, options)))
  }
  return results
}
