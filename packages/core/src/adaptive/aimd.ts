import { readNumber } from './read-number'
import { appLimited, type LimitUpdate } from './sample-window'

/** Knobs of the `'aimd'` algorithm; the defaults need no tuning. */
export interface AimdOptions {
  /** What a congested window multiplies the limit by, in [0.5, 1). Default 0.9. */
  backoffRatio?: number
  /**
   * A window whose mean latency exceeds `tolerance ×` the no-load latency counts as
   * congested, like a drop. At least 1; `Infinity` reacts to drops alone. Default 2.
   */
  tolerance?: number
}

/** The option names {@link aimd} reads, for the unknown-option check. */
export const AIMD_OPTIONS = ['backoffRatio', 'tolerance'] as const

/**
 * Additive increase, multiplicative decrease, per sampling window as TCP does per round
 * trip: a congested window (a drop, or latency over `tolerance ×` the no-load latency)
 * multiplies the limit by `backoffRatio` (always at least 1 less); any other window that
 * used at least half the limit adds 1. Netflix's AIMD steps on every request and sees only
 * drops and requests over a fixed timeout (5 s): under overload it keeps growing until
 * requests reach that timeout, long after latency has become unacceptable. The bound
 * relative to the no-load latency is our `tolerance`; stepping per window keeps growth at
 * one request per window however high the request rate.
 */
export function aimd(factory: string, options: AimdOptions): LimitUpdate {
  const backoffRatio = readNumber(
    factory,
    'backoffRatio',
    options.backoffRatio,
    0.9,
    (n) => n >= 0.5 && n < 1,
    'a number in [0.5, 1)',
  )
  const tolerance = readNumber(
    factory,
    'tolerance',
    options.tolerance,
    2,
    (n) => n >= 1,
    'a number of at least 1 (Infinity: drops only)',
  )
  return (limit, window) => {
    if (window.dropped || window.rtt > tolerance * window.noLoadRtt) {
      return Math.min(limit - 1, Math.floor(limit * backoffRatio))
    }
    return appLimited(limit, window) ? limit : limit + 1
  }
}
