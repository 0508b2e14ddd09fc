import type { TestProject } from 'vitest/node'
import startRedisServer from '../../../packages/redis/test/global-setup'
import { redisExamplesEnabled } from './switch'

/**
 * The global setup of every keyed-limiter example: the throw-away redis-server the
 * @sluice/redis tests use, started only while the Redis variants are switched on.
 */
export default async function setup(
  project: TestProject,
): Promise<(() => Promise<void>) | undefined> {
  if (!redisExamplesEnabled()) {
    project.provide('redisPort', null)
    return undefined
  }
  return startRedisServer(project)
}
