import { startApp } from './processes'

/**
 * `pnpm start`: two application processes on one Redis (REDIS_URL, default
 * redis://127.0.0.1:6379), then a few requests at each. With LIMIT=10 per minute per
 * client, the two together admit 10, not 20.
 */
const env = {
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  LIMIT: process.env.LIMIT ?? '10',
  WINDOW: process.env.WINDOW ?? '1m',
  PREFIX: process.env.PREFIX ?? `example-${Date.now()}:`,
}
const apps = await Promise.all([startApp('app-1', env), startApp('app-2', env)])
console.log(
  `app-1 on :${apps[0].port}, app-2 on :${apps[1].port}, limit ${env.LIMIT} per ${env.WINDOW}`,
)

let admitted = 0
for (let i = 0; i < 16; i++) {
  const app = apps[i % 2]!
  const response = await fetch(`http://127.0.0.1:${app.port}/`)
  if (response.ok) admitted++
  console.log(
    `${app.name}: ${response.status} RateLimit: ${response.headers.get('ratelimit') ?? '-'}`,
  )
}
console.log(`admitted ${admitted} of 16 across both processes`)
await Promise.all(apps.map((app) => app.stop()))
