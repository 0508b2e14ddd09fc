import { Session } from 'node:inspector/promises'

/** One function's share of the CPU samples of a profile. */
export interface ProfileLine {
  /** Function name and where it is defined (`packages/core/src/gcra.ts`, `express/lib/router.js:42`). */
  readonly frame: string
  /** Share of all samples spent in this function itself. */
  readonly selfPct: number
  /** Whether it is sluice's own code (under `packages/`). */
  readonly sluice: boolean
}

/** A CPU profile reduced to what a reader needs to see where the time goes. */
export interface ProfileSummary {
  /** Samples with the thread busy (idle samples are left out). */
  readonly samples: number
  /** Wall time each sample stands for, µs. */
  readonly usPerSample: number
  /**
   * Share of samples owed to sluice: in sluice functions, or in what they call of Node's
   * internals and of sluice's own dependencies (ipaddr.js, @noble/hashes). Samples in code a
   * sluice middleware merely runs through `next()` (the router, the handler) are not.
   */
  readonly sluiceAttributedPct: number
  /** Share of samples in sluice functions themselves. */
  readonly sluiceSelfPct: number
  /** Functions by self time, most first. */
  readonly top: readonly ProfileLine[]
  /** Busy samples of every function seen, by frame: what `compareProfiles` works on. */
  readonly frames: Readonly<Record<string, number>>
}

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}
interface ProfileNode {
  id: number
  callFrame: CallFrame
  hitCount?: number
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples?: number[]
}

/** A file URL shortened to what identifies it: repo-relative, or package-relative in node_modules. */
function shortUrl(url: string): string {
  if (url === '') return ''
  const modules = url.lastIndexOf('/node_modules/')
  if (modules !== -1) return url.slice(modules + '/node_modules/'.length)
  const repo = url.indexOf('/packages/')
  if (repo !== -1) return url.slice(repo + 1)
  const bench = url.indexOf('/bench/')
  if (bench !== -1) return url.slice(bench + 1)
  return url.replace(/^file:\/\//, '')
}

function isSluice(frame: CallFrame): boolean {
  return frame.url.includes('/packages/') && !frame.url.includes('/node_modules/')
}

/** Code a sample is charged to its caller for: Node's internals and sluice's own dependencies. */
function isTransparent(frame: CallFrame): boolean {
  const { url } = frame
  return (
    url === '' ||
    url.startsWith('node:') ||
    /\/node_modules\/(ipaddr\.js|@noble\/hashes)\//.test(url)
  )
}

/**
 * Reduces a V8 CPU profile (the format `node --cpu-prof` writes) to self time per
 * function and the share of samples owed to sluice code.
 *
 * @example
 * ```ts
 * summarizeProfile(JSON.parse(readFileSync('CPU.cpuprofile', 'utf8'))).top[0]
 * ```
 */
export function summarizeProfile(profile: Profile, limit = 12): ProfileSummary {
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  // Who a sample is charged to: the nearest frame up the stack that is sluice's or
  // someone else's own code, looking through Node internals and sluice's dependencies.
  const charged = new Map<number, boolean>()
  const chargedToSluice = (id: number): boolean => {
    const known = charged.get(id)
    if (known !== undefined) return known
    const node = byId.get(id)!
    const up = parent.get(id)
    const sluice = isSluice(node.callFrame)
      ? true
      : isTransparent(node.callFrame) && up !== undefined && chargedToSluice(up)
    charged.set(id, sluice)
    return sluice
  }
  let total = 0
  let attributed = 0
  let self = 0
  const frames = new Map<string, { hits: number; sluice: boolean }>()
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0
    if (hits === 0) continue
    const { functionName, url, lineNumber } = node.callFrame
    if (functionName === '(idle)') continue
    total += hits
    const sluice = isSluice(node.callFrame)
    if (sluice) self += hits
    if (chargedToSluice(node.id)) attributed += hits
    // Sources compiled by tsx sit on one line, so a line number there says nothing.
    const line = lineNumber > 0 ? `:${lineNumber + 1}` : ''
    const where = url === '' ? '' : ` ${shortUrl(url)}${line}`
    const frame = `${functionName || '(anonymous)'}${where}`
    const entry = frames.get(frame) ?? { hits: 0, sluice }
    entry.hits += hits
    frames.set(frame, entry)
  }
  const pct = (hits: number) => (total === 0 ? 0 : (100 * hits) / total)
  const sorted = [...frames.entries()].sort((a, b) => b[1].hits - a[1].hits)
  const top = sorted
    .slice(0, limit)
    .map(([frame, { hits, sluice }]) => ({ frame, selfPct: pct(hits), sluice }))
  const allSamples = profile.samples?.length ?? 0
  return {
    samples: total,
    usPerSample: allSamples === 0 ? 0 : (profile.endTime - profile.startTime) / allSamples,
    sluiceAttributedPct: pct(attributed),
    sluiceSelfPct: pct(self),
    top,
    frames: Object.fromEntries(sorted.map(([frame, { hits }]) => [frame, hits])),
  }
}

/** What one function costs per request more under one profile than under another. */
export interface AddedCost {
  readonly frame: string
  /** CPU µs per request in the second profile minus the first. */
  readonly us: number
}

/** Two profiles of the same work, per request: the cost of each and what grew. */
export interface ProfileComparison {
  /** CPU µs per request, first profile. */
  readonly baseUs: number
  /** CPU µs per request, second profile. */
  readonly testUs: number
  /** The functions whose CPU per request grew most, most first. */
  readonly added: readonly AddedCost[]
}

/**
 * Compares two CPU profiles of a server under the same load, per request served: each
 * function's share of a profile's busy samples times the process's measured CPU per
 * request (`process.cpuUsage()`, which time spent waiting for a core does not inflate)
 * gives its µs per request; functions are listed by how much that grew. With the
 * server's core saturated, throughput is the inverse of CPU per request, so
 * `baseUs / testUs` predicts the throughput ratio.
 *
 * @example
 * ```ts
 * const { added } = compareProfiles(bare, 21.5, withMiddleware, 24.0)
 * ```
 */
export function compareProfiles(
  base: ProfileSummary,
  baseUs: number,
  test: ProfileSummary,
  testUs: number,
  limit = 12,
): ProfileComparison {
  const perRequest = (p: ProfileSummary, us: number, frame: string) =>
    p.samples === 0 ? 0 : ((p.frames[frame] ?? 0) / p.samples) * us
  const frames = new Set([...Object.keys(base.frames), ...Object.keys(test.frames)])
  const added = [...frames]
    .map((frame) => ({
      frame,
      us: perRequest(test, testUs, frame) - perRequest(base, baseUs, frame),
    }))
    .sort((a, b) => b.us - a.us)
    .slice(0, limit)
  return { baseUs, testUs, added }
}

/**
 * Starts V8's sampling CPU profiler in this process (the profiler `--cpu-prof` uses);
 * the returned function stops it and summarises what it saw.
 *
 * @example
 * ```ts
 * const stop = await startCpuProfile()
 * await work()
 * const summary = await stop()
 * ```
 */
export async function startCpuProfile(intervalUs = 100): Promise<() => Promise<ProfileSummary>> {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs })
  await session.post('Profiler.start')
  return async () => {
    const { profile } = (await session.post('Profiler.stop')) as { profile: Profile }
    session.disconnect()
    return summarizeProfile(profile)
  }
}
