import 'reflect-metadata'
import type { INestApplication, ModuleMetadata } from '@nestjs/common'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { Test } from '@nestjs/testing'
import { afterEach } from 'vitest'

/** The two HTTP platforms every test runs on. */
export const platforms = ['express', 'fastify'] as const
export type Platform = (typeof platforms)[number]

const apps: INestApplication[] = []
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()))
})

/**
 * A real Nest application on `platform`, initialised, closed after the test. `trustProxy`
 * is the platform's own setting: Express's `trust proxy`, Fastify's `trustProxy`.
 */
export async function nestApp(
  platform: Platform,
  metadata: ModuleMetadata,
  configure?: (app: INestApplication) => void,
  { trustProxy }: { trustProxy?: boolean | number } = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule(metadata).compile()
  const app =
    platform === 'fastify'
      ? moduleRef.createNestApplication(
          new FastifyAdapter(trustProxy === undefined ? {} : { trustProxy }),
          { logger: false },
        )
      : moduleRef.createNestApplication({ logger: false })
  if (platform === 'express' && trustProxy !== undefined) {
    app.getHttpAdapter().getInstance().set('trust proxy', trustProxy)
  }
  apps.push(app)
  configure?.(app)
  await app.init()
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready()
  return app
}
