/**
 * `pnpm bench:nestjs`: the same Nest app behind sluice's guard and behind @nestjs/throttler's,
 * measured in one run with autocannon, on the Express and the Fastify platform, with a
 * baseline without a guard. The limit is far above the load, so every request is admitted:
 * what is measured is the guard's cost on the common path (key, decision, headers).
 *
 * Written without decorator syntax (`Reflect.decorate`); the script runs tsx with
 * packages/nestjs's tsconfig, whose legacy decorators @sluice/nestjs's source needs.
 */
import 'reflect-metadata'
import type { AddressInfo } from 'node:net'
import { Controller, Get, type INestApplication, Module, type Type } from '@nestjs/common'
import { APP_GUARD, NestFactory } from '@nestjs/core'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler'
import { SluiceGuard, SluiceModule } from '@sluice/nestjs'
import autocannon from 'autocannon'

const LIMIT = 1e9
const DURATION_S = Number(process.env.BENCH_DURATION ?? 5)
const CONNECTIONS = 50

class HelloController {
  hello() {
    return { hello: 'world' }
  }
}
Reflect.decorate([Controller()], HelloController)
Reflect.decorate(
  [Get()],
  HelloController.prototype,
  'hello',
  Object.getOwnPropertyDescriptor(HelloController.prototype, 'hello'),
)

/** A root module importing `imports`, with `guard` as APP_GUARD (none for the baseline). */
function appModule(imports: unknown[], guard: Type | undefined): Type {
  class AppModule {}
  Reflect.decorate(
    [
      Module({
        imports: imports as never,
        controllers: [HelloController],
        providers: guard === undefined ? [] : [{ provide: APP_GUARD, useClass: guard }],
      }),
    ],
    AppModule,
  )
  return AppModule
}

const contenders = {
  'no guard': () => appModule([], undefined),
  '@sluice/nestjs': () =>
    appModule([SluiceModule.forRoot({ limit: LIMIT, window: '1m' })], SluiceGuard),
  '@nestjs/throttler': () =>
    appModule([ThrottlerModule.forRoot([{ ttl: 60_000, limit: LIMIT }])], ThrottlerGuard),
}

async function start(module: Type, platform: 'express' | 'fastify'): Promise<INestApplication> {
  const app =
    platform === 'fastify'
      ? await NestFactory.create(module, new FastifyAdapter(), { logger: false })
      : await NestFactory.create(module, { logger: false })
  await app.listen(0, '127.0.0.1')
  return app
}

async function measure(app: INestApplication) {
  const { port } = app.getHttpServer().address() as AddressInfo
  const url = `http://127.0.0.1:${port}/`
  // A short warm-up, so the JIT has seen the path before the measured run.
  const check = await fetch(url)
  if (check.status !== 200) throw new Error(`GET ${url} answered ${check.status}`)
  await autocannon({ url, connections: CONNECTIONS, duration: 1 })
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S })
  const non2xx = result.non2xx + result.errors + result.timeouts
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx,
  }
}

for (const platform of ['express', 'fastify'] as const) {
  console.log(`\n${platform} (${CONNECTIONS} connections, ${DURATION_S} s each)`)
  for (const [name, build] of Object.entries(contenders)) {
    const app = await start(build(), platform)
    try {
      const { rps, p50, p99, non2xx } = await measure(app)
      console.log(
        `  ${name.padEnd(18)} ${String(rps).padStart(7)} req/s  p50 ${p50} ms  p99 ${p99} ms${non2xx ? `  (${non2xx} errors or non-2xx!)` : ''}`,
      )
    } finally {
      await app.close()
    }
  }
}
