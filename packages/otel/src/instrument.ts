import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { type Attributes, type MeterProvider, metrics } from '@opentelemetry/api'
import { readOptions, typeError } from '@sluice/core/validation'
import {
  type AdaptiveLimitEvent,
  type BulkheadEvent,
  CHANNELS,
  type RateLimitEvent,
  type StoreEvent,
} from '@sluice/keyed'

/** The meter's version: this package's (a test keeps it equal to package.json). */
export const VERSION = '0.1.0'

/**
 * How a request fared, in `sluice.rate_limiting.result`: ASP.NET Core's `acquired`, one
 * word for its `endpoint_limiter` and `global_limiter` (the policy attribute says which
 * limit refused), `canceled` for its `request_canceled` (a queued client left), and
 * `would_refuse` for a dry run's refusal that was not carried out.
 */
export type RateLimitingResult = 'acquired' | 'refused' | 'canceled' | 'would_refuse'

/** Options of {@link instrument}. */
export interface InstrumentOptions {
  /**
   * Where the instruments are created. Default: the global one at the time of the call,
   * `metrics.getMeterProvider()` (register your SDK's provider before calling).
   */
  meterProvider?: MeterProvider
}

/** What {@link instrument} returns: stop it to unsubscribe from every sluice channel. */
export interface Instrumentation extends Disposable {
  /** Unsubscribes from every channel; recording stops. A second call does nothing. */
  stop(): void
}

const OPTION_NAMES = ['meterProvider']

const POLICY = 'sluice.rate_limiting.policy'
const RESULT = 'sluice.rate_limiting.result'
const LIMITER = 'sluice.rate_limiting.limiter'
const STORE = 'sluice.rate_limiting.store.name'
const STORE_EVENT = 'sluice.rate_limiting.store.event'

/**
 * Seconds, 5 ms to 10 s: the boundaries OpenTelemetry's semantic conventions give
 * `aspnetcore.rate_limiting.request.time_in_queue` and `request_lease.duration` (and
 * `http.server.request.duration`). The SDK's default ([0, 5, 10, ..., 10000]) is made for
 * milliseconds and would put nearly every wait in its first bucket.
 */
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]

/**
 * Turns sluice's `node:diagnostics_channel` events into OpenTelemetry metrics, named after
 * ASP.NET Core's rate-limiting instruments under the `sluice.rate_limiting` namespace:
 *
 * - `sluice.rate_limiting.requests` (counter): decisions, by `sluice.rate_limiting.policy`
 *   and `sluice.rate_limiting.result` (`acquired`, `refused`, `would_refuse`), from
 *   `rateLimit()` and `bulkhead()` alike;
 * - `sluice.rate_limiting.active_request_leases` and `sluice.rate_limiting.queued_requests`
 *   (up-down counters): bulkhead slots held and requests waiting, by policy;
 * - `sluice.rate_limiting.request.time_in_queue` and `sluice.rate_limiting.request_lease.duration`
 *   (histograms, seconds): time queued for a bulkhead slot (by policy and result), and time
 *   a slot was held (by policy);
 * - `sluice.rate_limiting.limit` (gauge): an adaptive bulkhead's limit, by
 *   `sluice.rate_limiting.limiter`, once it first moves;
 * - `sluice.rate_limiting.store.events` (counter): a shared store starting to fail or
 *   recovering, by `sluice.rate_limiting.store.name` and `sluice.rate_limiting.store.event`.
 *
 * Client keys are never attribute values: one series per client would swamp any metrics
 * backend. Policy and limiter names are, so keep them a fixed set.
 *
 * Nothing is subscribed until this is called, and sluice builds no event while nobody
 * listens. Calling it twice records everything twice.
 *
 * @example
 * ```ts
 * import { MeterProvider } from '@opentelemetry/sdk-metrics'
 * import { instrument } from '@sluice/otel'
 *
 * const metrics = instrument({ meterProvider: new MeterProvider() })
 * metrics.stop()
 * ```
 */
export function instrument(options: InstrumentOptions = {}): Instrumentation {
  readOptions('instrument', options, OPTION_NAMES)
  const provider = options.meterProvider ?? metrics.getMeterProvider()
  if (typeof (provider as Partial<MeterProvider> | null)?.getMeter !== 'function') {
    throw typeError('instrument', 'meterProvider', 'must be a MeterProvider', provider)
  }
  const meter = provider.getMeter('@sluice/otel', VERSION)

  const requests = meter.createCounter('sluice.rate_limiting.requests', {
    description: 'Requests that a sluice rate limit or bulkhead decided on.',
    unit: '{request}',
  })
  const leases = meter.createUpDownCounter('sluice.rate_limiting.active_request_leases', {
    description: 'Requests holding a bulkhead slot.',
    unit: '{request}',
  })
  const queued = meter.createUpDownCounter('sluice.rate_limiting.queued_requests', {
    description: 'Requests waiting in a bulkhead queue for a slot.',
    unit: '{request}',
  })
  const timeInQueue = meter.createHistogram('sluice.rate_limiting.request.time_in_queue', {
    description: 'How long requests waited in a bulkhead queue before entering or giving up.',
    unit: 's',
    advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
  })
  const leaseDuration = meter.createHistogram('sluice.rate_limiting.request_lease.duration', {
    description: 'How long requests held a bulkhead slot.',
    unit: 's',
    advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
  })
  const limit = meter.createGauge('sluice.rate_limiting.limit', {
    description: 'The current limit of an adaptive concurrency limiter.',
    unit: '{request}',
  })
  const storeEvents = meter.createCounter('sluice.rate_limiting.store.events', {
    description: 'Times a shared store started failing or recovered.',
    unit: '{event}',
  })

  const decided = (policy: string, result: RateLimitingResult): Attributes => ({
    [POLICY]: policy,
    [RESULT]: result,
  })

  const onRateLimit = (message: unknown) => {
    const event = message as RateLimitEvent
    const result = event.allowed ? 'acquired' : event.enforced ? 'refused' : 'would_refuse'
    requests.add(1, decided(event.policy, result))
  }

  const onBulkhead = (message: unknown) => {
    const event = message as BulkheadEvent
    const policy = { [POLICY]: event.policy }
    switch (event.event) {
      case 'queue':
        queued.add(1, policy)
        break
      case 'enter':
        requests.add(1, decided(event.policy, 'acquired'))
        leases.add(1, policy)
        // `waitedMs` on an enter means the request came out of the queue.
        if (event.waitedMs !== undefined) {
          queued.add(-1, policy)
          timeInQueue.record(event.waitedMs / 1000, decided(event.policy, 'acquired'))
        }
        break
      case 'timeout':
        // The refusal follows as its own `reject` event, counted there.
        queued.add(-1, policy)
        if (event.waitedMs !== undefined) {
          timeInQueue.record(event.waitedMs / 1000, decided(event.policy, 'refused'))
        }
        break
      case 'cancel':
        queued.add(-1, policy)
        requests.add(1, decided(event.policy, 'canceled'))
        if (event.waitedMs !== undefined) {
          timeInQueue.record(event.waitedMs / 1000, decided(event.policy, 'canceled'))
        }
        break
      case 'reject':
        requests.add(1, decided(event.policy, 'refused'))
        break
      case 'release':
        leases.add(-1, policy)
        if (event.heldMs !== undefined) leaseDuration.record(event.heldMs / 1000, policy)
        break
    }
  }

  const onAdaptive = (message: unknown) => {
    const event = message as AdaptiveLimitEvent
    limit.record(event.limit, { [LIMITER]: event.limiter })
  }

  const onStore = (message: unknown) => {
    // `error` stays out: its message is free text, one series per distinct failure.
    const event = message as StoreEvent
    storeEvents.add(1, { [STORE]: event.store, [STORE_EVENT]: event.event })
  }

  const listeners: [string, (message: unknown) => void][] = [
    [CHANNELS.rateLimit, onRateLimit],
    [CHANNELS.bulkhead, onBulkhead],
    [CHANNELS.adaptive, onAdaptive],
    [CHANNELS.store, onStore],
  ]
  for (const [channel, listener] of listeners) subscribe(channel, listener)

  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    for (const [channel, listener] of listeners) unsubscribe(channel, listener)
  }
  return { stop, [Symbol.dispose]: stop }
}
