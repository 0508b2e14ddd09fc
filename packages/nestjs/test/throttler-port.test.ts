/**
 * @nestjs/throttler's own e2e cases (its test/ folder: controller, multi, function-overrides,
 * skipIf), ported to sluice's names and written anew. Time is a ManualClock where theirs
 * sleeps. `headers: 'legacy'` gives the X-RateLimit-* headers their cases read; draft-8
 * (the default) lists every policy in one `RateLimit` header instead of one header per
 * throttler name. The README lists the cases that do not map, and why.
 */
import { Controller, Get, HttpCode, Post } from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import { ManualClock } from '@sluice/core'
import request from 'supertest'
import { describe, expect, it } from 'vitest'
import {
  keys,
  type NestRequest,
  RateLimit,
  SkipRateLimit,
  SluiceGuard,
  SluiceModule,
  type SluiceModuleOptions,
} from '../src/index'
import { nestApp, platforms } from './app'

const success = { success: true }

// test/app/controllers/app.controller.ts
@Controller()
@RateLimit({ name: 'default', limit: 2, window: '10s', algorithm: 'fixed-window' })
class AppController {
  @Get()
  test() {
    return success
  }

  @Get('ignored')
  @SkipRateLimit()
  ignored() {
    return { ignored: true }
  }

  @Get('ignore-user-agents')
  ignoreUserAgents() {
    return { ignored: true }
  }
}

// test/app/controllers/limit.controller.ts
@RateLimit({
  name: 'default',
  limit: 2,
  window: '10s',
  algorithm: 'fixed-window',
  block: { for: '5s' },
})
@Controller('limit')
class LimitController {
  @Get()
  getThrottled() {
    return success
  }

  @RateLimit({
    name: 'default',
    limit: 5,
    window: '10s',
    algorithm: 'fixed-window',
    block: { for: '15s' },
  })
  @Get('higher')
  getHigher() {
    return success
  }
}

// test/app/controllers/default.controller.ts
@Controller('default')
class DefaultController {
  @Get()
  getDefault() {
    return success
  }
}

// controller.e2e-spec.ts's ThrottleTestController
@Controller('test/throttle')
class ThrottleTestController {
  @RateLimit({
    name: 'default',
    limit: 1,
    window: '1s',
    algorithm: 'fixed-window',
    block: { for: '1s' },
  })
  @Post()
  @HttpCode(201)
  testThrottle() {
    return { code: 'THROTTLE_TEST' }
  }
}

const userAgent = (req: NestRequest) => String(req.headers['user-agent'])

// test/app/controllers/controller.module.ts: limit 5, ttl 60 s, blockDuration 20 s,
// ignoreUserAgents [/throttler-test/]. Throttler counts each handler apart: so does the
// route in the key here.
function controllerModule(clock: ManualClock, options: SluiceModuleOptions = {}) {
  return {
    imports: [
      SluiceModule.forRoot({
        name: 'default',
        limit: 5,
        window: '60s',
        algorithm: 'fixed-window',
        block: { for: '20s' },
        skip: (req) => /throttler-test/.test(userAgent(req)),
        key: keys.compose(keys.route(), keys.ip()),
        headers: 'legacy',
        clock,
        ...options,
      }),
    ],
    controllers: [AppController, DefaultController, LimitController, ThrottleTestController],
    providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
  }
}

const limitHeaders = (limit: number, remaining: number) => ({
  'x-ratelimit-limit': String(limit),
  'x-ratelimit-remaining': String(remaining),
  'x-ratelimit-reset': expect.stringMatching(/^\d+$/),
})

describe.each(platforms)('@nestjs/throttler e2e cases on %s', (platform) => {
  describe('controller.e2e-spec', () => {
    it('GET /ignored: a skipped handler sends no headers', async () => {
      const app = await nestApp(platform, controllerModule(new ManualClock()))
      const response = await request(app.getHttpServer()).get('/ignored')
      expect(response.body).toEqual({ ignored: true })
      expect(response.headers['x-ratelimit-limit']).toBeUndefined()
    })

    it('GET /ignore-user-agents: ignoreUserAgents is a skip by user agent', async () => {
      const app = await nestApp(platform, controllerModule(new ManualClock()))
      for (let i = 0; i < 4; i++) {
        const response = await request(app.getHttpServer())
          .get('/ignore-user-agents')
          .set('user-agent', 'throttler-test/0.0.0')
        expect(response.body).toEqual({ ignored: true })
        expect(response.headers['x-ratelimit-limit']).toBeUndefined()
      }
    })

    it('GET /: the controller default applies', async () => {
      const app = await nestApp(platform, controllerModule(new ManualClock()))
      const response = await request(app.getHttpServer()).get('/')
      expect(response.body).toEqual(success)
      expect(response.headers).toMatchObject(limitHeaders(2, 1))
    })

    it.each([
      { url: '', limit: 2, blockMs: 5_000 },
      { url: '/higher', limit: 5, blockMs: 15_000 },
    ])(
      'GET /limit$url: class level, overridden per handler, blocked for its blockDuration',
      async ({ url, limit, blockMs }) => {
        const clock = new ManualClock()
        const app = await nestApp(platform, controllerModule(clock))
        const server = app.getHttpServer()
        for (let i = 0; i < limit; i++) {
          const response = await request(server).get(`/limit${url}`)
          expect(response.body).toEqual(success)
          expect(response.headers).toMatchObject(limitHeaders(limit, limit - (i + 1)))
        }
        const refused = await request(server).get(`/limit${url}`)
        expect(refused.status).toBe(429)
        expect(refused.body).toEqual({ statusCode: 429, message: 'Too Many Requests' })
        // Throttler forgets the count when a block ends and says Retry-After: blockDuration;
        // sluice's block comes on top of the window, and Retry-After is when a request can
        // pass again: the later of the block's end and the 10 s window's.
        expect(refused.headers['retry-after']).toBe(String(Math.max(blockMs, 10_000) / 1000))
        clock.advance(Math.max(blockMs, 10_000))
        const response = await request(server).get(`/limit${url}`)
        expect(response.body).toEqual(success)
        expect(response.headers).toMatchObject(limitHeaders(limit, limit - 1))
      },
    )

    it('GET /default: the forRoot options apply', async () => {
      const clock = new ManualClock()
      const app = await nestApp(platform, controllerModule(clock))
      const server = app.getHttpServer()
      for (let i = 0; i < 5; i++) {
        const response = await request(server).get('/default')
        expect(response.body).toEqual(success)
        expect(response.headers).toMatchObject(limitHeaders(5, 5 - (i + 1)))
      }
      const refused = await request(server).get('/default')
      expect(refused.status).toBe(429)
      // The 60 s window outlasts the 20 s block (see GET /limit).
      expect(refused.headers['retry-after']).toBe('60')
      clock.advance(60_000)
      const response = await request(server).get('/default')
      expect(response.body).toEqual(success)
      expect(response.headers).toMatchObject(limitHeaders(5, 4))
    })

    it('POST /test/throttle: limit 1 per second, a second refusal while blocked', async () => {
      const clock = new ManualClock()
      const app = await nestApp(platform, controllerModule(clock))
      const post = () => request(app.getHttpServer()).post('/test/throttle')
      expect((await post()).status).toBe(201)
      clock.advance(1_000)
      expect((await post()).status).toBe(201)
      expect((await post()).status).toBe(429)
      expect((await post()).status).toBe(429)
    })

    it('skipIf: a skip that returns true lets everything through', async () => {
      const app = await nestApp(
        platform,
        controllerModule(new ManualClock(), { limit: 5, skip: () => true }),
      )
      for (let i = 0; i < 15; i++) {
        const response = await request(app.getHttpServer()).get('/default')
        expect(response.status).toBe(200)
        expect(response.headers['x-ratelimit-limit']).toBeUndefined()
      }
    })
  })

  // test/multi: three named throttlers at once; @SkipThrottle({ short: true }) per handler.
  @Controller()
  class MultiController {
    @Get()
    simpleRoute() {
      return success
    }

    @SkipRateLimit(['short'])
    @Get('skip-short')
    skipShort() {
      return success
    }

    @SkipRateLimit(['default', 'long'])
    @Get('skip-default-and-long')
    skipDefaultAndLong() {
      return success
    }
  }

  function multiModule(clock: ManualClock) {
    return {
      imports: [
        SluiceModule.forRoot({
          policies: [
            { name: 'default', limit: 2, window: '5s', algorithm: 'fixed-window' },
            { name: 'long', limit: 5, window: '1m', algorithm: 'fixed-window' },
            { name: 'short', limit: 1, window: '1s', algorithm: 'fixed-window' },
          ],
          key: keys.compose(keys.route(), keys.ip()),
          clock,
        }),
      ],
      controllers: [MultiController],
      providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
    }
  }

  /** The `r` (remaining) of each policy in a draft-8 `RateLimit` header. */
  const remaining = (header: string | undefined) =>
    Object.fromEntries(
      (header ?? '').split(', ').map((item) => {
        const [, name, r] = /^"([^"]+)";r=(\d+)/.exec(item) ?? []
        return [name, Number(r)]
      }),
    )

  describe('multi-throttler.e2e-spec', () => {
    it('checks 1/s, 2/5s and 5/min together', async () => {
      const clock = new ManualClock()
      const app = await nestApp(platform, multiModule(clock))
      const get = () => request(app.getHttpServer()).get('/')
      let response = await get()
      expect(response.status).toBe(200)
      expect(remaining(response.headers.ratelimit)).toEqual({ default: 1, long: 4, short: 0 })
      response = await get()
      expect(response.status).toBe(429)
      expect(response.headers['retry-after']).toBe('1')
      clock.advance(1_000)
      response = await get()
      expect(response.status).toBe(200)
      expect(remaining(response.headers.ratelimit)).toEqual({ default: 0, long: 3, short: 0 })
      clock.advance(1_000)
      expect((await get()).status).toBe(429)
      clock.advance(5_000)
      response = await get()
      expect(response.status).toBe(200)
      expect(remaining(response.headers.ratelimit)).toEqual({ default: 1, long: 2, short: 0 })
      clock.advance(1_000)
      expect((await get()).status).toBe(200)
      clock.advance(5_000)
      response = await get()
      expect(response.status).toBe(200)
      expect(remaining(response.headers.ratelimit)).toEqual({ default: 1, long: 0, short: 0 })
      clock.advance(1_000)
      response = await get()
      expect(response.status).toBe(429)
      // The long window (a fixed minute from 0) ends 46 s from here.
      expect(response.headers['retry-after']).toBe('46')
    })

    it('skips the short policy on one handler', async () => {
      const app = await nestApp(platform, multiModule(new ManualClock()))
      const first = await request(app.getHttpServer()).get('/skip-short')
      expect(remaining(first.headers.ratelimit)).toEqual({ default: 1, long: 4 })
      const second = await request(app.getHttpServer()).get('/skip-short')
      expect(second.status).toBe(200)
      expect(remaining(second.headers.ratelimit)).toEqual({ default: 0, long: 3 })
    })

    it('skips the default and long policies on another', async () => {
      const app = await nestApp(platform, multiModule(new ManualClock()))
      const first = await request(app.getHttpServer()).get('/skip-default-and-long')
      expect(first.status).toBe(200)
      expect(remaining(first.headers.ratelimit)).toEqual({ short: 0 })
      expect((await request(app.getHttpServer()).get('/skip-default-and-long')).status).toBe(429)
    })
  })

  // test/function-overrides: a throttler whose getTracker/generateKey put every route in
  // one budget (here a policy's own key is a handler's @RateLimit key).
  @Controller()
  class OverridesController {
    @Get()
    simpleRoute() {
      return success
    }

    @Get('1')
    simpleRouteOne() {
      return success
    }

    @SkipRateLimit(['default'])
    @RateLimit({ name: 'custom', limit: 2, window: '3s', key: () => 'customTrackerString' })
    @Get('custom')
    customRoute() {
      return success
    }

    @SkipRateLimit(['default'])
    @RateLimit({ name: 'custom', limit: 2, window: '3s', key: () => 'customTrackerString' })
    @Get('custom/1')
    customRouteOne() {
      return success
    }
  }

  describe('function-overrides-throttler.e2e-spec', () => {
    it('counts the default throttler per route and client', async () => {
      const app = await nestApp(platform, {
        imports: [
          SluiceModule.forRoot({
            name: 'default',
            limit: 2,
            window: '3s',
            key: keys.compose(keys.route(), keys.ip()),
            clock: new ManualClock(),
          }),
        ],
        controllers: [OverridesController],
        providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
      })
      const server = app.getHttpServer()
      expect((await request(server).get('/')).status).toBe(200)
      expect((await request(server).get('/')).status).toBe(200)
      expect((await request(server).get('/')).status).toBe(429)
      expect((await request(server).get('/1')).status).toBe(200)
    })

    it('counts a custom key in one budget across routes', async () => {
      const app = await nestApp(platform, {
        imports: [
          SluiceModule.forRoot({
            name: 'default',
            limit: 2,
            window: '3s',
            clock: new ManualClock(),
          }),
        ],
        controllers: [OverridesController],
        providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
      })
      const server = app.getHttpServer()
      const first = await request(server).get('/custom')
      expect(first.headers['ratelimit-policy']).toBe('"custom";q=2;w=3')
      expect(first.status).toBe(200)
      expect((await request(server).get('/custom/1')).status).toBe(200)
      expect((await request(server).get('/custom')).status).toBe(429)
      expect((await request(server).get('/custom/1')).status).toBe(429)
    })
  })
})
