import { describe } from '../validation'
import { readNumber } from './read-number'
import { appLimited, type LimitUpdate, latencyRatio } from './sample-window'

/** Knobs of the `'vegas'` algorithm; the defaults need no tuning. */
export interface VegasOptions {
  /**
   * Below `alpha × log10(limit)` estimated queued requests the limit grows by
   * `log10(limit)`. Positive, less than `beta`. Default 3.
   */
  alpha?: number
  /**
   * Above `beta × log10(limit)` estimated queued requests the limit shrinks by
   * `log10(limit)`. Default 6.
   */
  beta?: number
  /** Share of each new estimate blended into the limit, in (0, 1]. Default 1 (none). */
  smoothing?: number
}

/** The option names {@link vegas} reads, for the unknown-option check. */
export const VEGAS_OPTIONS = ['alpha', 'beta', 'smoothing'] as const

/**
 * TCP Vegas as Netflix applies it to requests: by Little's law the limit minus what the
 * no-load latency can serve is the queue, `limit × (1 − noLoadRtt / rtt)`. At most one
 * `log10(limit)` queued: grow fast (by `beta × log10(limit)`); under `alpha` times that:
 * grow by `log10(limit)`; over `beta` times that: shrink by `log10(limit)`; in between,
 * hold. A dropped request shrinks it too. Thresholds grow with `log10` of the limit so a
 * large limit tolerates a proportionate queue. `noLoadRtt` is the mean of the limiter's
 * low-concurrency probe, where Netflix takes the smallest single latency ever seen: one
 * lucky fast request then makes every later one look queued and the limit collapses.
 */
export function vegas(factory: string, options: VegasOptions): LimitUpdate {
  const positive = (n: number) => n > 0 && Number.isFinite(n)
  const rule = 'a finite positive number'
  const alpha = readNumber(factory, 'alpha', options.alpha, 3, positive, rule)
  const beta = readNumber(factory, 'beta', options.beta, 6, positive, rule)
  if (alpha >= beta) {
    throw new RangeError(
      `${factory}: "alpha" must be less than "beta", got alpha ${describe(alpha)} and beta ${describe(beta)}`,
    )
  }
  const smoothing = readNumber(
    factory,
    'smoothing',
    options.smoothing,
    1,
    (n) => n > 0 && n <= 1,
    'a number in (0, 1]',
  )
  return (limit, window) => {
    const step = Math.max(1, Math.log10(limit))
    let target: number
    if (window.dropped) {
      target = limit - step
    } else if (appLimited(limit, window)) {
      return limit
    } else {
      const queue = limit * Math.max(0, 1 - latencyRatio(window))
      if (queue <= step) target = limit + beta * step
      else if (queue < alpha * step) target = limit + step
      else if (queue > beta * step) target = limit - step
      else return limit
    }
    return limit * (1 - smoothing) + target * smoothing
  }
}
