import { ALGORITHMS } from '@sluice/core'
import type { ContenderResult, ScenarioResult } from './decision'
import type { HeapLine } from './heap'
import type { AppResult } from './http'
import type { Framework } from './http-apps'
import type { ProfileSummary } from './profile'
import { pairedRatio, type Summary } from './stats'

/** One target of issue 7, measured. */
export interface TargetRow {
  readonly target: string
  readonly measured: string
  /** `undefined` when it could not be measured in this run. */
  readonly met: boolean | undefined
  /** How far off a missed target is, in words. */
  readonly miss?: string
  /** What the evidence for a miss should come from (filled in by the orchestrator). */
  readonly evidence?: Evidence
}

/** What to profile for a missed target. */
export type Evidence =
  | { readonly kind: 'cpu'; readonly contender: string; readonly keys: number }
  | { readonly kind: 'heap'; readonly contender: string }
  | { readonly kind: 'http'; readonly framework: Framework }

/** The numbers the targets are judged on. */
export interface Measured {
  readonly decision: readonly ScenarioResult[]
  readonly http: readonly AppResult[]
}

/** Evidence gathered for missed targets, keyed by `evidenceKey`. */
export interface Evidences {
  readonly cpu: ReadonlyMap<string, ProfileSummary>
  readonly heap: ReadonlyMap<string, readonly HeapLine[]>
}

export const HOT_FLOOR_FACTOR = 1.15
export const FIXED_VS_HONO_FACTOR = 1.1
export const BYTES_PER_KEY = 100
export const HTTP_FRACTION = 0.97

/** The peers sluice's hot-key path must beat, and the contender ids standing for them. */
const MUST_BEAT: readonly { peer: string; ids: readonly string[] }[] = [
  { peer: 'express-rate-limit', ids: ['peer/express-rate-limit'] },
  // Of limiter's two paths, the faster: beating it beats both.
  { peer: 'limiter', ids: ['peer/limiter-token-bucket', 'peer/limiter-rate-limiter'] },
  { peer: 'rate-limiter-flexible', ids: ['peer/rate-limiter-flexible'] },
  { peer: 'koa-ratelimit', ids: ['peer/koa-ratelimit'] },
]

/** "1.07× (1.02–1.12)" */
export function ratioText(s: Summary | undefined): string {
  if (s === undefined || s.n === 0) return 'n/a'
  return `${s.median.toFixed(2)}× (${s.min.toFixed(2)}–${s.max.toFixed(2)})`
}

function usable(r: ContenderResult | undefined): r is ContenderResult {
  return r !== undefined && r.error === undefined && r.samples.length > 0
}

function find(scenario: ScenarioResult | undefined, id: string): ContenderResult | undefined {
  return scenario?.results.find((r) => r.contender.id === id)
}

/**
 * Judges every target of issue 7 on this run's numbers. Ratios are medians of
 * round-by-round ratios (see `pairedRatio`), so both sides of each ratio were measured
 * within the same round.
 */
export function evaluateTargets(measured: Measured): TargetRow[] {
  const rows: TargetRow[] = []
  const hot = measured.decision.find((s) => s.scenario.keys === 1)
  const large = measured.decision.reduce<ScenarioResult | undefined>(
    (best, s) => (best === undefined || s.scenario.keys > best.scenario.keys ? s : best),
    undefined,
  )

  for (const algorithm of ALGORITHMS) {
    const id = `sluice/${algorithm}`
    const result = find(hot, id)
    const target = `Hot-key \`tryAcquire\`, ${algorithm}: ≤ ${HOT_FLOOR_FACTOR}× the inline-GCRA floor`
    if (!usable(result) || result.vsFloor === undefined) {
      rows.push({ target, measured: 'not measured', met: undefined })
      continue
    }
    const ratio = result.vsFloor.median
    const met = ratio <= HOT_FLOOR_FACTOR
    rows.push({
      target,
      measured: `${ratioText(result.vsFloor)}, ${result.ns.median.toFixed(1)} ns`,
      met,
      ...(met
        ? {}
        : {
            miss: `${((ratio / HOT_FLOOR_FACTOR - 1) * 100).toFixed(0)}% over the bound`,
            evidence: { kind: 'cpu', contender: id, keys: 1 },
          }),
    })
  }

  for (const { peer, ids } of MUST_BEAT) {
    const target = `Hot-key \`tryAcquire\` of every algorithm faster than ${peer}`
    const peers = ids.map((id) => find(hot, id)).filter(usable)
    const fastestPeer = peers.sort((a, b) => a.ns.median - b.ns.median)[0]
    const ours = ALGORITHMS.map((a) => find(hot, `sluice/${a}`)).filter(usable)
    if (fastestPeer === undefined || ours.length === 0) {
      rows.push({ target, measured: 'not measured', met: undefined })
      continue
    }
    const ratios = ours.map((r) => ({ r, ratio: pairedRatio(r.samples, fastestPeer.samples) }))
    const worst = ratios.sort((a, b) => b.ratio.median - a.ratio.median)[0]!
    const met = worst.ratio.median < 1
    rows.push({
      target,
      measured: `slowest: ${worst.r.contender.algorithm} at ${ratioText(worst.ratio)} of ${fastestPeer.contender.label} (${worst.r.ns.median.toFixed(1)} vs ${fastestPeer.ns.median.toFixed(1)} ns)`,
      met,
      ...(met
        ? {}
        : {
            miss: `${((worst.ratio.median - 1) * 100).toFixed(0)}% slower`,
            evidence: { kind: 'cpu', contender: worst.r.contender.id, keys: 1 },
          }),
    })
  }

  {
    const target = `Hot-key fixed window ≤ ${FIXED_VS_HONO_FACTOR}× hono-rate-limiter's MemoryStore`
    const fixed = find(hot, 'sluice/fixed-window')
    const hono = find(hot, 'peer/hono-rate-limiter')
    if (!usable(fixed) || !usable(hono)) {
      rows.push({ target, measured: 'not measured', met: undefined })
    } else {
      const ratio = pairedRatio(fixed.samples, hono.samples)
      const met = ratio.median <= FIXED_VS_HONO_FACTOR
      rows.push({
        target,
        measured: `${ratioText(ratio)} (${fixed.ns.median.toFixed(1)} vs ${hono.ns.median.toFixed(1)} ns)`,
        met,
        ...(met
          ? {}
          : {
              miss: `${((ratio.median / FIXED_VS_HONO_FACTOR - 1) * 100).toFixed(0)}% over the bound`,
              evidence: { kind: 'cpu', contender: 'sluice/fixed-window', keys: 1 },
            }),
      })
    }
  }

  for (const algorithm of ['token-bucket', 'fixed-window'] as const) {
    const id = `sluice/${algorithm}@store`
    const keys = large?.scenario.keys ?? 0
    const target = `Memory store, ${algorithm}: ≤ ${BYTES_PER_KEY} bytes per key at 1,000,000 keys`
    const result = find(large, id)
    if (result?.bytesPerKey === undefined || keys < 1_000_000) {
      rows.push({
        target,
        measured:
          result?.bytesPerKey === undefined
            ? 'not measured'
            : `${result.bytesPerKey.toFixed(0)} B/key at ${keys.toLocaleString('en-US')} keys (not a 1M run)`,
        met: undefined,
      })
      continue
    }
    const met = result.bytesPerKey <= BYTES_PER_KEY
    rows.push({
      target,
      measured: `${result.bytesPerKey.toFixed(1)} B/key`,
      met,
      ...(met
        ? {}
        : {
            miss: `${(result.bytesPerKey - BYTES_PER_KEY).toFixed(0)} B/key over`,
            evidence: { kind: 'heap', contender: id },
          }),
    })
  }

  for (const framework of ['express', 'koa', 'hono'] as const) {
    const target = `${framework}: sluice middleware ≥ ${HTTP_FRACTION} of bare req/s`
    const app = measured.http.find((a) => a.framework === framework && a.variant === 'sluice')
    if (app === undefined || app.error !== undefined || app.vsBare === undefined) {
      rows.push({
        target,
        measured: app?.error === undefined ? 'not measured' : `not measured: ${app.error}`,
        met: undefined,
      })
      continue
    }
    const met = app.vsBare.median >= HTTP_FRACTION
    const headersOnly = measured.http.find(
      (a) => a.framework === framework && a.variant === 'headers',
    )
    const cpu = (s: Summary | undefined) =>
      s === undefined ? 'n/a' : `${s.median >= 0 ? '+' : '−'}${Math.abs(s.median).toFixed(1)} µs`
    const bound =
      headersOnly?.vsBare === undefined
        ? ''
        : `; two constant headers alone, no limiter: ${headersOnly.vsBare.median.toFixed(3)}. Server CPU per request over bare: sluice ${cpu(app.addedCpuUs)}, headers alone ${cpu(headersOnly.addedCpuUs)}`
    rows.push({
      target,
      measured: `${app.vsBare.median.toFixed(3)} (${app.vsBare.min.toFixed(3)}–${app.vsBare.max.toFixed(3)})${bound}`,
      met,
      ...(met
        ? {}
        : {
            miss: `${((HTTP_FRACTION - app.vsBare.median) * 100).toFixed(1)} points of bare throughput short`,
            evidence: { kind: 'http', framework },
          }),
    })
  }
  return rows
}
