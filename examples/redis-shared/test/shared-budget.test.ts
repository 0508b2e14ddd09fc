import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { type AppProcess, startApp } from '../src/processes'

const redisPort = inject('redisPort')
const LIMIT = 15

describe.skipIf(redisPort === null)('two app processes on one Redis', () => {
  let apps: AppProcess[] = []

  beforeAll(async () => {
    const env = {
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      LIMIT: String(LIMIT),
      // Long enough that nothing refills while the test runs.
      WINDOW: '60m',
      PREFIX: `example-${process.pid}-${Date.now()}:`,
    }
    apps = await Promise.all([startApp('app-a', env), startApp('app-b', env)])
  })

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.stop()))
  })

  const get = (app: AppProcess) => fetch(`http://127.0.0.1:${app.port}/`)

  it('admit exactly the limit between them', async () => {
    const [a, b] = apps as [AppProcess, AppProcess]
    // Alternating requests see one counter: each process continues where the other left off.
    const sequence = []
    for (const app of [a, b, a, b]) {
      const response = await get(app)
      sequence.push([
        response.status,
        (await response.json()) as { instance: string; remaining: number },
      ])
    }
    expect(sequence).toEqual([
      [200, { instance: 'app-a', remaining: 14 }],
      [200, { instance: 'app-b', remaining: 13 }],
      [200, { instance: 'app-a', remaining: 12 }],
      [200, { instance: 'app-b', remaining: 11 }],
    ])

    // Then a concurrent burst at both: the budget left (11) is admitted, not 11 per process.
    const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => get(apps[i % 2]!)))
    const statuses = burst.map((response) => response.status)
    expect(statuses.filter((status) => status === 200)).toHaveLength(LIMIT - 4)
    expect(statuses.filter((status) => status === 429)).toHaveLength(40 - (LIMIT - 4))
    const refused = burst.find((response) => response.status === 429)!
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
  })
})
