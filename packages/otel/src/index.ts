/**
 * OpenTelemetry metrics for sluice: `instrument()` subscribes to the events sluice
 * publishes on `node:diagnostics_channel` and records them as instruments named after
 * ASP.NET Core's rate-limiting metrics (`sluice.rate_limiting.requests`,
 * `active_request_leases`, `queued_requests`, `request.time_in_queue`, ...).
 *
 * @packageDocumentation
 * @module \@sluice/otel
 */
export {
  type Instrumentation,
  type InstrumentOptions,
  instrument,
  type RateLimitingResult,
} from './instrument'
