import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { rateLimit } from '@sluice/express'
import { redisStore } from '@sluice/redis'
import express from 'express'
import { Redis } from 'ioredis'

/**
 * One application process. Run several (see main.ts): they count against one budget per
 * client because their limiter state lives in Redis, not in the process.
 *
 * Environment: PORT (default 0: any free port), REDIS_URL (default redis://127.0.0.1:6379),
 * LIMIT (default 10) and WINDOW (default '1m') per client address, PREFIX (default
 * 'example:'), INSTANCE (a name for the answers).
 */
const instance = process.env.INSTANCE ?? `pid ${process.pid}`
const limit = Number(process.env.LIMIT ?? 10)
const window = (process.env.WINDOW ?? '1m') as `${number}m`

// Without an offline queue a call fails at once while the connection is down, instead of
// waiting to be replayed later: the store then answers by its onError policy straight away.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  enableOfflineQueue: false,
})
redis.on('error', () => {
  // Reported once per outage by the store's onFailure; ioredis would log every retry.
})
await once(redis, 'ready')

const store = redisStore({
  client: redis,
  prefix: process.env.PREFIX ?? 'example:',
  timeout: '250ms',
  onError: 'local',
  onFailure: (error) =>
    console.error(`[${instance}] Redis unavailable, limiting locally: ${error.message}`),
  onRecovery: () => console.error(`[${instance}] Redis is back`),
})

const app = express()
app.use(rateLimit({ limit, window, store }))
app.get('/', (req, res) => {
  res.json({ instance, remaining: req.rateLimit?.remaining })
})

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  // One JSON line on stdout: how main.ts and the smoke test learn the port.
  console.log(JSON.stringify({ instance, port }))
})

process.once('SIGTERM', () => {
  server.close()
  redis.disconnect()
})
