/** What one sampling window of completed requests tells an algorithm. */
export interface SampleWindow {
  /** Mean latency of the window's requests, in milliseconds. */
  readonly rtt: number
  /** Mean latency measured at low concurrency in the last probe, in milliseconds. */
  readonly noLoadRtt: number
  /** Most requests in flight at once during the window. */
  readonly maxInFlight: number
  /** Whether any request in the window was released as dropped. */
  readonly dropped: boolean
}

/** One algorithm's step: the next (real-valued) limit from the current one and a window. */
export type LimitUpdate = (limit: number, window: SampleWindow) => number

/**
 * `noLoadRtt / rtt`: 1 means no queueing, 0.5 means requests took twice the no-load time.
 * A window of zero-length requests (a coarse clock) shows no queueing rather than NaN.
 */
export function latencyRatio(window: SampleWindow): number {
  return window.rtt > 0 ? window.noLoadRtt / window.rtt : 1
}

/**
 * Netflix's guard against growing a limit nobody uses: with fewer than half the permits
 * ever in flight the window says nothing about what more concurrency would do.
 */
export function appLimited(limit: number, window: SampleWindow): boolean {
  return window.maxInFlight * 2 < limit
}
