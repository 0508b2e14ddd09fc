import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMetricsApp, type MetricsApp } from './app'

/** The report's work, held until the test opens the gate. */
let started = 0
let open: () => void
const gate = new Promise<void>((resolve) => {
  open = resolve
})
const report = () => {
  started++
  return gate
}

let metricsApp: MetricsApp
let server: Server
let base: string

beforeAll(async () => {
  metricsApp = createMetricsApp({ apiLimit: 6, report })
  server = metricsApp.app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  open()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  await metricsApp.shutdown()
})

const get = (path: string) => fetch(`${base}${path}`)

/** Scrapes /metrics as Prometheus would. */
async function scrape(): Promise<string> {
  const res = await get('/metrics')
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('text/plain')
  return res.text()
}

const SCOPE = 'otel_scope_name="@sluice/otel",otel_scope_version="0.1.0"'

/**
 * The value of `metric`'s sample with exactly these labels (then the scope's, then a
 * histogram bucket's `le`), or undefined when there is no such line.
 */
function sample(
  text: string,
  metric: string,
  labels: Record<string, string>,
  le?: string,
): number | undefined {
  const rendered = Object.entries(labels)
    .map(([name, value]) => `${name}="${value}"`)
    .concat(SCOPE, le === undefined ? [] : [`le="${le}"`])
    .join(',')
  const prefix = `${metric}{${rendered}} `
  const line = text.split('\n').find((l) => l.startsWith(prefix))
  return line === undefined ? undefined : Number(line.slice(prefix.length))
}

const requests = (text: string, policy: string, result: string) =>
  sample(text, 'sluice_rate_limiting_requests_total', {
    sluice_rate_limiting_policy: policy,
    sluice_rate_limiting_result: result,
  })
const byPolicy = (text: string, metric: string, policy: string) =>
  sample(text, metric, { sluice_rate_limiting_policy: policy })

/** Scrapes until `ready` holds (a request reached the server), for at most 2 s. */
async function scrapeUntil(ready: (text: string) => boolean): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const text = await scrape()
    if (ready(text) || attempt === 100) return text
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('examples/metrics: Prometheus scrape of sluice metrics', () => {
  it('shows bulkhead leases and queue while a report runs, then the totals', async () => {
    const first = get('/report')
    await expect.poll(() => started, { timeout: 2_000 }).toBe(1)
    const second = get('/report')
    const during = await scrapeUntil(
      (text) => byPolicy(text, 'sluice_rate_limiting_queued_requests', 'reports') === 1,
    )
    // The slot is taken and the one queue place too: a third report is refused.
    const third = await get('/report')
    expect(third.status).toBe(503)

    expect(byPolicy(during, 'sluice_rate_limiting_active_request_leases', 'reports')).toBe(1)
    expect(byPolicy(during, 'sluice_rate_limiting_queued_requests', 'reports')).toBe(1)
    expect(requests(during, 'reports', 'acquired')).toBe(1)
    expect(during).toContain('# TYPE sluice_rate_limiting_active_request_leases gauge')
    expect(during).toContain('# TYPE sluice_rate_limiting_queued_requests gauge')

    open()
    expect((await first).status).toBe(200)
    expect((await second).status).toBe(200)
    expect(started).toBe(2)

    // Three searches under a dry-run limit of 2, then over the API limit of 6.
    for (const path of ['/search', '/search', '/search']) expect((await get(path)).status).toBe(200)
    expect((await get('/')).status).toBe(429)

    const after = await scrape()
    expect(after).toContain('# TYPE sluice_rate_limiting_requests_total counter')
    expect(requests(after, 'api', 'acquired')).toBe(6)
    expect(requests(after, 'api', 'refused')).toBe(1)
    expect(requests(after, 'search-trial', 'acquired')).toBe(2)
    expect(requests(after, 'search-trial', 'would_refuse')).toBe(1)
    expect(requests(after, 'search-trial', 'refused')).toBeUndefined()
    expect(requests(after, 'reports', 'acquired')).toBe(2)
    expect(requests(after, 'reports', 'refused')).toBe(1)

    expect(byPolicy(after, 'sluice_rate_limiting_active_request_leases', 'reports')).toBe(0)
    expect(byPolicy(after, 'sluice_rate_limiting_queued_requests', 'reports')).toBe(0)

    expect(after).toContain('# TYPE sluice_rate_limiting_request_time_in_queue histogram')
    const queued = {
      sluice_rate_limiting_policy: 'reports',
      sluice_rate_limiting_result: 'acquired',
    }
    expect(sample(after, 'sluice_rate_limiting_request_time_in_queue_count', queued)).toBe(1)
    expect(sample(after, 'sluice_rate_limiting_request_time_in_queue_sum', queued)).toBeGreaterThan(
      0,
    )
    const leased = { sluice_rate_limiting_policy: 'reports' }
    expect(sample(after, 'sluice_rate_limiting_request_lease_duration_count', leased)).toBe(2)
    expect(
      sample(after, 'sluice_rate_limiting_request_lease_duration_bucket', leased, '+Inf'),
    ).toBe(2)

    // The client (the key every decision was counted under) is in no label.
    expect(after).not.toContain('127.0.0.1')
    expect(after).toContain('service_name="sluice-metrics-example"')
  })
})
