import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { bulkhead, rateLimit } from '@sluice/express'
import { instrument } from '@sluice/otel'
import express, { type Express } from 'express'

/** Stand-in for slow work (a report, a call to a partner API). */
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Options the test turns down (or takes control of) to reach the limits quickly. */
export interface AppOptions {
  /** Requests per minute per client over the whole API. Default 100. */
  apiLimit?: number
  /** What the report does while it holds its bulkhead slot. Default: 500 ms of waiting. */
  report?: () => Promise<void>
}

/** The app and a way to stop its metrics. */
export interface MetricsApp {
  readonly app: Express
  /** Stops recording and shuts the meter provider down. */
  shutdown(): Promise<void>
}

/**
 * An API whose rate limits and bulkhead are measured with `@sluice/otel` and served to
 * Prometheus at `/metrics` by OpenTelemetry's Prometheus exporter: a global limit per
 * client, a limit in dry run on search (it only reports what it would refuse), and a
 * bulkhead around a slow report.
 *
 * @example
 * ```ts
 * const { app } = createMetricsApp()
 * app.listen(3000) // then: curl localhost:3000/metrics
 * ```
 */
export function createMetricsApp(options: AppOptions = {}): MetricsApp {
  const { apiLimit = 100, report = () => pause(500) } = options

  // The exporter is a metric reader that answers scrapes; the app serves it on its own port.
  const exporter = new PrometheusExporter({ preventServerStart: true })
  const meterProvider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': 'sluice-metrics-example' }),
    readers: [exporter],
  })
  const metrics = instrument({ meterProvider })

  const app = express()
  // Before the limits: a scraper is never refused.
  app.get('/metrics', (req, res) => exporter.getMetricsRequestHandler(req, res))

  app.use(rateLimit({ name: 'api', limit: apiLimit, window: '1m' }))

  // A limit being tried out: nothing is refused, the metrics count what would have been.
  app.get(
    '/search',
    rateLimit({ name: 'search-trial', limit: 2, window: '1m', dryRun: true }),
    (_req, res) => {
      res.json({ results: [] })
    },
  )

  app.get(
    '/report',
    bulkhead({ name: 'reports', max: 1, maxQueue: 1, queueTimeout: '10s' }),
    async (_req, res) => {
      await report()
      res.json({ report: 'done' })
    },
  )

  app.get('/', (_req, res) => {
    res.json({ hello: 'sluice' })
  })

  return {
    app,
    async shutdown() {
      metrics.stop()
      await meterProvider.shutdown()
    },
  }
}
