// The app of the README's block, on both platforms (the block runner of examples/readme
// does not compile legacy decorators). Keep the two in step.
import { Controller, Get, Module, Post } from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import request from 'supertest'
import { describe, expect, it } from 'vitest'
import { Bulkhead, RateLimit, SkipRateLimit, SluiceGuard, SluiceModule } from '../src/index'
import { nestApp, platforms } from './app'

@Controller()
export class AppController {
  @Get()
  hello() {
    return 'hello'
  }

  @RateLimit({ name: 'login', limit: 5, window: '15m', block: { for: '1h', after: 3 } })
  @Post('login')
  login() {
    return { ok: true }
  }

  @Bulkhead({ max: 4, maxQueue: 20, queueTimeout: '5s' })
  @Get('report')
  async report() {
    return { rows: [] }
  }

  @SkipRateLimit()
  @Get('health')
  health() {
    return 'ok'
  }
}

@Module({
  imports: [SluiceModule.forRoot({ limit: 100, window: '1m' })],
  controllers: [AppController],
  providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
})
export class AppModule {}

describe.each(platforms)('the README app on %s', (platform) => {
  it('limits, blocks logins, holds report slots and skips health checks', async () => {
    const app = await nestApp(platform, { imports: [AppModule] })
    const server = app.getHttpServer()
    const hello = await request(server).get('/')
    expect(hello.text).toBe('hello')
    expect(hello.headers['ratelimit-policy']).toBe('"100-per-1m";q=100;w=60')
    const logins: number[] = []
    for (let i = 0; i < 7; i++) logins.push((await request(server).post('/login')).status)
    expect(logins).toEqual([201, 201, 201, 201, 201, 429, 429])
    const refused = await request(server).post('/login')
    expect(refused.headers['retry-after']).toBe('3600')
    expect((await request(server).get('/report')).body).toEqual({ rows: [] })
    const health = await request(server).get('/health')
    expect(health.text).toBe('ok')
    expect(health.headers.ratelimit).toBeUndefined()
  })
})
