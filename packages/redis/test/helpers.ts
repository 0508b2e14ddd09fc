import { randomUUID } from 'node:crypto'
import type { LimiterSpec } from '@sluice/core'
import type { BlockOptions, Policy, PolicyOptions } from '@sluice/http'
import { compilePolicy, concurrencyPolicy } from '@sluice/keyed/store'
import { Redis, type RedisOptions } from 'ioredis'
import { afterAll, describe, expect, inject } from 'vitest'

/** The port of the run's redis-server (see global-setup.ts); `null` when there is none. */
export const redisPort = inject('redisPort')

/** `describe` that skips (loudly, see global-setup.ts) when no redis-server could be started. */
export const describeRedis = describe.skipIf(redisPort === null)

const clients: Redis[] = []
afterAll(async () => {
  await Promise.all(
    clients.splice(0).map((client) => client.quit().catch(() => client.disconnect())),
  )
})

/** An ioredis client to the run's redis-server (or `port`), closed after the file's tests. */
export function connect(options: RedisOptions & { port?: number } = {}): Redis {
  const client = new Redis({ host: '127.0.0.1', port: redisPort ?? 0, ...options })
  clients.push(client)
  return client
}

/** A prefix no other test uses, so tests sharing one redis-server never see each other's keys. */
export function uniquePrefix(): string {
  return `test-${randomUUID().slice(0, 8)}:`
}

type Spec<A extends LimiterSpec['algorithm']> = Omit<
  Extract<LimiterSpec, { algorithm: A }>,
  'algorithm'
> & { window: number; block?: BlockOptions }

/**
 * A validated policy as `@sluice/http` builds them (`compilePolicy`): durations in
 * milliseconds, defaults filled in, `id` from name and spec.
 */
export const policy = {
  tokenBucket: (name: string, spec: Spec<'token-bucket'>): Policy =>
    timed(name, { algorithm: 'token-bucket', ...spec }),
  leakyBucket: (name: string, spec: Spec<'leaky-bucket'>): Policy =>
    timed(name, { algorithm: 'leaky-bucket', ...spec }),
  fixedWindow: (name: string, spec: Spec<'fixed-window'>): Policy =>
    timed(name, { algorithm: 'fixed-window', ...spec }),
  slidingWindow: (name: string, spec: Spec<'sliding-window'>): Policy =>
    timed(name, { algorithm: 'sliding-window', ...spec }),
  warmUp: (name: string, spec: Spec<'warm-up'> & { warmUp: number }): Policy =>
    timed(name, { algorithm: 'warm-up', ...spec }),
  concurrency: (name: string, max: number): Policy => concurrencyPolicy(name, max),
}

function timed(name: string, options: PolicyOptions): Policy {
  return compilePolicy({ ...options, name }, 'test')
}

export const SECOND = 1_000
export const MINUTE = 60 * SECOND
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Waits (polling, up to 20 s) until `done` holds: state that a background probe changes.
 * It bounds the wait on a loaded machine; it times nothing.
 */
export async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 800 && !done(); i++) await sleep(25)
  expect(done(), what).toBe(true)
}
