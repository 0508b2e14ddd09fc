/**
 * Issue 27's targets (quota leases on Redis, the cluster store): judged by the two benches
 * that run in processes of their own (`leases/main.ts`, `cluster/main.ts`), which print
 * one `TARGET <json>` line per target they measured; `pnpm bench` puts them in RESULTS.md's
 * Targets section, and a target a bench did not report (it failed) as not measured.
 */
import type { TargetRow } from './targets'

export const LEASE_FACTOR = 10
export const EXACT_FACTOR = 1.3
export const CALLS_PER_1000 = 20
export const BOUND_SHARE = 0.01
export const CLUSTER_P99_US = 200
export const CLUSTER_LEASE_FACTOR = 10

/** Every target of the issue, by id, as RESULTS.md words it. */
export const ISSUE_27 = {
  leaseHot: `Hot key, 200 in flight from one process: with leases ≥ ${LEASE_FACTOR}× the best peer's decisions/s`,
  leaseCallsHot: `Hot key, 200 in flight, with leases: ≤ ${CALLS_PER_1000} store calls per 1,000 decisions at steady state (a limit of 1,000,000,000 per hour)`,
  'leaseCalls:fixed-window': `Hot key, 200 in flight, with leases, fixed window of 100,000 per minute offered at its rate: ≤ ${CALLS_PER_1000} store calls per 1,000 decisions at steady state`,
  'leaseCalls:sliding-window': `Hot key, 200 in flight, with leases, sliding window of 100,000 per minute offered at its rate: ≤ ${CALLS_PER_1000} store calls per 1,000 decisions at steady state`,
  'leaseCalls:token-bucket': `Hot key, 200 in flight, with leases, token bucket of 100,000 per minute offered at its rate: ≤ ${CALLS_PER_1000} store calls per 1,000 decisions at steady state`,
  exactHot: `Hot key, 200 in flight from one process: exact (no lease) ≥ ${EXACT_FACTOR}× the best peer's decisions/s`,
  'bound:fixed-window':
    '10 processes on one key at 2× the limit, fixed window: admitted ≤ limit + stated bound (0) in every window',
  'bound:sliding-window':
    '10 processes on one key at 2× the limit, sliding window: admitted ≤ limit + stated bound (N × B) in every window',
  'bound:token-bucket':
    '10 processes on one key at 2× the limit, token bucket: admitted ≤ capacity + rate × (b − a) + stated bound (N × B) in every interval',
  boundShare: `The stated bound ≤ ${100 * BOUND_SHARE}% of the limit for 10 processes at the default share, for limits ≥ 10,000 per window`,
  clusterBudget: 'Cluster store, 4 workers, exact mode: one global budget (admitted = limit)',
  clusterP99: `Cluster store, 4 workers, exact mode: decision p99 ≤ ${CLUSTER_P99_US} µs (1 in flight per worker)`,
  'clusterLease:1': `Cluster store, 4 workers, leased mode: ≥ ${CLUSTER_LEASE_FACTOR}× rate-limiter-flexible's RateLimiterCluster decisions/s (1 in flight per worker)`,
  'clusterLease:50': `Cluster store, 4 workers, leased mode: ≥ ${CLUSTER_LEASE_FACTOR}× rate-limiter-flexible's RateLimiterCluster decisions/s (50 in flight per worker)`,
} as const

export type Issue27Target = keyof typeof ISSUE_27

const PREFIX = 'TARGET '

/** The line a bench prints for one target it measured. */
export function targetLine(
  id: Issue27Target,
  measured: string,
  met: boolean | undefined,
  miss?: string,
): string {
  const row: TargetRow = {
    issue: 27,
    target: ISSUE_27[id],
    measured,
    met,
    ...(met === false && miss !== undefined ? { miss } : {}),
  }
  return `${PREFIX}${JSON.stringify({ id, ...row })}`
}

/** The targets in a bench's output, and the output without their lines. */
export function takeTargets(output: string): {
  rows: (TargetRow & { id: string })[]
  rest: string
} {
  const rows: (TargetRow & { id: string })[] = []
  const rest: string[] = []
  for (const line of output.split('\n')) {
    if (line.startsWith(PREFIX)) rows.push(JSON.parse(line.slice(PREFIX.length)))
    else rest.push(line)
  }
  return { rows, rest: rest.join('\n') }
}

/** Every issue-27 target, measured or not, in the order of {@link ISSUE_27}. */
export function issue27Rows(reported: readonly (TargetRow & { id: string })[]): TargetRow[] {
  return (Object.keys(ISSUE_27) as Issue27Target[]).map((id) => {
    const row = reported.find((r) => r.id === id)
    if (row === undefined) {
      return {
        issue: 27,
        target: ISSUE_27[id],
        measured: 'not measured in this run',
        met: undefined,
      }
    }
    const { id: _, ...rest } = row
    return rest
  })
}
