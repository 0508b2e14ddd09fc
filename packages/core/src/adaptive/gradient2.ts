import { readNumber } from './read-number'
import { appLimited, type LimitUpdate, latencyRatio } from './sample-window'

/** Knobs of the `'gradient2'` algorithm; the defaults need no tuning. */
export interface Gradient2Options {
  /**
   * How many times the no-load latency a window's mean latency may reach before the limit
   * shrinks: the room left for natural variation. At least 1. Default 1.5.
   */
  tolerance?: number
  /**
   * Share of each new estimate blended into the limit, in (0, 1]: lower moves slower and
   * rides out noise. Default 0.2.
   */
  smoothing?: number
  /**
   * Requests allowed to queue on top of what the gradient keeps: the headroom that lets
   * the limit grow while latency stays low. A number, or a function of the current limit.
   * Default `max(4, √limit)`, so a large limit grows (and is held) in proportion.
   */
  queueSize?: number | ((limit: number) => number)
}

/** The option names {@link gradient2} reads, for the unknown-option check. */
export const GRADIENT2_OPTIONS = ['tolerance', 'smoothing', 'queueSize'] as const

const defaultQueueSize = (limit: number): number => Math.max(4, Math.sqrt(limit))

/**
 * Netflix's Gradient2: the gradient `tolerance × noLoadRtt / rtt`, clamped to [0.5, 1],
 * scales the limit down as queueing shows in latency; `queueSize` is added on top so the
 * limit probes upward while the gradient is 1; `smoothing` blends the result in. Our
 * long-term latency is the no-load latency re-measured by the limiter's probes (Envoy's
 * minRTT), not Netflix's exponential average of every sample: under sustained overload
 * that average climbs with the queue itself and the limit creeps up after it.
 */
export function gradient2(factory: string, options: Gradient2Options): LimitUpdate {
  const tolerance = readNumber(
    factory,
    'tolerance',
    options.tolerance,
    1.5,
    (n) => n >= 1 && Number.isFinite(n),
    'a finite number of at least 1',
  )
  const smoothing = readNumber(
    factory,
    'smoothing',
    options.smoothing,
    0.2,
    (n) => n > 0 && n <= 1,
    'a number in (0, 1]',
  )
  const queueSize = readQueueSize(factory, options.queueSize)
  return (limit, window) => {
    if (appLimited(limit, window)) return limit
    // Never halve in one step: one slow window is as likely an outlier as a queue.
    const gradient = Math.max(0.5, Math.min(1, tolerance * latencyRatio(window)))
    const target = limit * gradient + queueSize(limit)
    return limit * (1 - smoothing) + target * smoothing
  }
}

function readQueueSize(
  factory: string,
  value: Gradient2Options['queueSize'],
): (limit: number) => number {
  if (value === undefined) return defaultQueueSize
  if (typeof value === 'function') {
    // A function's answer is only known per window; a bad one adds nothing.
    return (limit) => {
      const size = value(limit)
      return Number.isFinite(size) && size > 0 ? size : 0
    }
  }
  const size = readNumber(
    factory,
    'queueSize',
    value,
    0,
    (n) => n >= 0 && Number.isFinite(n),
    'a finite non-negative number or a function of the limit',
  )
  return () => size
}
