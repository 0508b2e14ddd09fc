import type { TestProject } from 'vitest/node'
import { findRedisServer, startRedisServer } from './redis-server'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Port of the redis-server this run started, or `null` when none could be started. */
    redisPort: number | null
  }
}

/** CI sets `CI=true`; anything but empty, `0` or `false` counts. */
function underCi(): boolean {
  const ci = process.env.CI
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false'
}

/**
 * Starts one redis-server on a free port for the whole run and provides its port to the
 * tests (`inject('redisPort')`). Without a redis-server binary the Redis tests are skipped
 * with a loud message on a developer machine, and the run fails under CI.
 */
export default async function setup(
  project: TestProject,
): Promise<(() => Promise<void>) | undefined> {
  if (findRedisServer() === undefined) {
    const message =
      'redis-server was not found on PATH (or $REDIS_SERVER): the Redis tests cannot run.'
    if (underCi()) throw new Error(`${message} CI must run them: install redis-server.`)
    console.warn(
      `\n${'!'.repeat(78)}\n!! SKIPPING REDIS TESTS: ${message}\n!! Install it (apt-get install redis-server, brew install redis) to run them.\n${'!'.repeat(78)}\n`,
    )
    project.provide('redisPort', null)
    return undefined
  }
  const server = await startRedisServer()
  project.provide('redisPort', server.port)
  return () => server.stop()
}
