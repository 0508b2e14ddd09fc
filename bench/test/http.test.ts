import { afterEach, describe, expect, it } from 'vitest'
import { FRAMEWORKS, type RunningApp, startApp, VARIANTS } from '../src/http-apps'
import { load, probe } from '../src/http-load'

const running: RunningApp[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()))
})

async function start(...args: Parameters<typeof startApp>): Promise<RunningApp> {
  const app = await startApp(...args)
  running.push(app)
  return app
}

async function statuses(port: number, count: number): Promise<number[]> {
  const seen: number[] = []
  for (let i = 0; i < count; i++) seen.push((await probe(port)).status)
  return seen
}

describe('the HTTP section’s apps', () => {
  it.each(
    FRAMEWORKS.flatMap((framework) => VARIANTS.map((variant) => [framework, variant] as const)),
  )(
    '%s %s answers hello world, with rate-limit headers unless bare or told not to send them',
    async (framework, variant) => {
      const app = await start(framework, variant)
      const response = await fetch(`http://127.0.0.1:${app.port}/`)
      expect(response.status).toBe(200)
      expect(await response.text()).toBe('hello world')
      const names = [...response.headers.keys()].filter((name) => name.includes('ratelimit'))
      if (variant === 'bare' || variant === 'bulkhead-quiet') expect(names).toEqual([])
      else expect(names.length).toBeGreaterThan(0)
    },
  )

  it.each(
    FRAMEWORKS.flatMap((framework) =>
      (['sluice', 'peer'] as const).map((variant) => [framework, variant] as const),
    ),
  )('%s %s middleware really limits per client', async (framework, variant) => {
    // An hour per window: no request is let through again while the test runs.
    const app = await start(framework, variant, { limit: 2, windowMs: 3_600_000 })
    expect(await statuses(app.port, 3)).toEqual([200, 200, 429])
  })
})

describe('load', () => {
  it('drives an app and reports throughput, p99 and failures', async () => {
    const app = await start('express', 'bare')
    const result = await load(app.port, 1, 2)
    expect(result.responses).toBeGreaterThan(0)
    expect(result.rps).toBeGreaterThan(0)
    expect(result.failures).toBe(0)
    expect(Number.isFinite(result.p99Ms)).toBe(true)
  })

  it('counts refusals as failures, so a run that hit the limit is never taken for a result', async () => {
    const app = await start('express', 'sluice', { limit: 1, windowMs: 3_600_000 })
    const result = await load(app.port, 1, 2)
    expect(result.failures).toBeGreaterThan(0)
  })
})
