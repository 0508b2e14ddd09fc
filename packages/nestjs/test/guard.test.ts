import {
  type ArgumentsHost,
  Controller,
  type ExecutionContext,
  Get,
  Injectable,
  Module,
  UseGuards,
} from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import { ManualClock } from '@sluice/core'
import { listen } from '@sluice/http/testing'
import { watchWarnings } from '@sluice/keyed/testing'
import request from 'supertest'
import { describe, expect, it } from 'vitest'
import {
  Bulkhead,
  keys,
  RateLimit,
  type RateLimitOptions,
  SkipRateLimit,
  SluiceGuard,
  SluiceModule,
  type SluiceModuleOptions,
} from '../src/index'
import { nestApp, platforms } from './app'

@Controller()
class AppController {
  @Get('a')
  a() {
    return { route: 'a' }
  }

  @Get('b')
  b() {
    return { route: 'b' }
  }

  @SkipRateLimit()
  @Get('health')
  health() {
    return 'ok'
  }

  @RateLimit({ limit: 1, window: '1m' })
  @Get('strict')
  strict() {
    return 'strict'
  }

  @RateLimit({ name: 'burst', limit: 1, window: '1s' })
  @Get('burst')
  burst() {
    return 'burst'
  }

  @RateLimit({ name: 'minute', limit: 2, window: '1m' })
  @RateLimit({ name: 'second', limit: 1, window: '1s' })
  @Get('stacked')
  stacked() {
    return 'stacked'
  }

  @Bulkhead({ max: 2 })
  @Get('pooled')
  pooled() {
    return 'pooled'
  }
}

@RateLimit({ limit: 2, window: '1m', name: 'class' })
@Controller('limited')
class LimitedController {
  @Get('default')
  byDefault() {
    return 'class default'
  }

  @RateLimit({ limit: 4, window: '1m', name: 'own' })
  @Get('own')
  own() {
    return 'own'
  }
}

@RateLimit({ limit: 2, window: '1m', key: keys.global() })
@RateLimit({ name: 'hourly', limit: 50, window: '1h' })
@Controller('layered')
class LayeredController {
  @Get('default')
  byDefault() {
    return 'default'
  }

  @RateLimit({ name: 'hourly', limit: 10, window: '1h' })
  @Get('hourly')
  hourly() {
    return 'hourly'
  }

  @RateLimit({ limit: 1, window: '1m' })
  @Get('unnamed')
  unnamed() {
    return 'unnamed'
  }

  @RateLimit({ headers: 'legacy' })
  @Get('legacy')
  legacy() {
    return 'legacy'
  }
}

@SkipRateLimit()
@Controller('open')
class OpenController {
  @Get()
  open() {
    return 'open'
  }

  @SkipRateLimit(false)
  @Get('closed')
  closed() {
    return 'closed'
  }
}

// Header times come from the clock: a manual one keeps them exact.
const global = (options: SluiceModuleOptions = { limit: 3, window: '1m' }) => ({
  imports: [SluiceModule.forRoot({ clock: new ManualClock(), ...options })],
  controllers: [AppController, LimitedController, OpenController],
  providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
})

async function statuses(app: { getHttpServer(): unknown }, path: string, n: number) {
  const out: number[] = []
  for (let i = 0; i < n; i++)
    out.push((await request(app.getHttpServer() as never).get(path)).status)
  return out
}

describe.each(platforms)('SluiceGuard on %s', (platform) => {
  it('limits every route by the module policy, with RateLimit headers and a 429', async () => {
    const app = await nestApp(platform, global())
    const server = app.getHttpServer()
    const first = await request(server).get('/a')
    expect(first.status).toBe(200)
    expect(first.headers['ratelimit-policy']).toBe('"3-per-1m";q=3;w=60')
    expect(first.headers.ratelimit).toBe('"3-per-1m";r=2;t=66')
    await request(server).get('/a').expect(200)
    await request(server).get('/a').expect(200)
    const refused = await request(server).get('/a')
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toBe('66')
    expect(refused.headers.ratelimit).toBe('"3-per-1m";r=0;t=66')
    expect(refused.headers['content-type']).toMatch(/^application\/json/)
    expect(refused.body).toEqual({ statusCode: 429, message: 'Too Many Requests' })
  })

  it('counts one budget per client across the routes it guards', async () => {
    const app = await nestApp(platform, global())
    const server = app.getHttpServer()
    await request(server).get('/a').expect(200)
    await request(server).get('/b').expect(200)
    await request(server).get('/a').expect(200)
    await request(server).get('/b').expect(429)
  })

  it('lets @SkipRateLimit() routes through uncounted, and @SkipRateLimit(false) limits again', async () => {
    const app = await nestApp(platform, global({ limit: 1, window: '1m' }))
    expect(await statuses(app, '/health', 3)).toEqual([200, 200, 200])
    expect(await statuses(app, '/open', 3)).toEqual([200, 200, 200])
    const health = await request(app.getHttpServer()).get('/health')
    expect(health.headers.ratelimit).toBeUndefined()
    expect(await statuses(app, '/open/closed', 2)).toEqual([200, 429])
  })

  it('replaces the module policy with an unnamed handler policy', async () => {
    const app = await nestApp(platform, global())
    const strict = await request(app.getHttpServer()).get('/strict')
    expect(strict.headers['ratelimit-policy']).toBe('"1-per-1m";q=1;w=60')
    expect((await request(app.getHttpServer()).get('/strict')).status).toBe(429)
    // The module's budget was not touched by /strict.
    expect(await statuses(app, '/a', 4)).toEqual([200, 200, 200, 429])
  })

  it('adds a differently named handler policy to the module policy, atomically', async () => {
    const app = await nestApp(platform, global())
    const first = await request(app.getHttpServer()).get('/burst')
    expect(first.status).toBe(200)
    expect(first.headers['ratelimit-policy']).toBe('"3-per-1m";q=3;w=60, "burst";q=1;w=1')
    expect((await request(app.getHttpServer()).get('/burst')).status).toBe(429)
    // /burst spent one of the module's three; its refusal spent nothing.
    expect(await statuses(app, '/a', 3)).toEqual([200, 200, 429])
  })

  it('takes a controller @RateLimit as its handlers default, a handler one adding to it', async () => {
    const app = await nestApp(platform, global())
    expect(await statuses(app, '/limited/default', 3)).toEqual([200, 200, 429])
    // "own" is named apart from "class": the handler keeps its controller's policy and
    // adds its own (the two handlers share the "class" budget, spent above).
    const own = await request(app.getHttpServer()).get('/limited/own')
    expect(own.headers['ratelimit-policy']).toBe(
      '"3-per-1m";q=3;w=60, "class";q=2;w=60, "own";q=4;w=60',
    )
    expect(own.status).toBe(429)
  })

  it("merges a handler's @RateLimit over its controller's by name", async () => {
    const app = await nestApp(platform, {
      imports: [SluiceModule.forRoot({ clock: new ManualClock(), limit: 3, window: '1m' })],
      controllers: [LayeredController],
      providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
    })
    const policy = async (path: string) =>
      (await request(app.getHttpServer()).get(path)).headers['ratelimit-policy']
    // The controller: its unnamed policy replaces the module's, "hourly" is added.
    expect(await policy('/layered/default')).toBe('"2-per-1m";q=2;w=60, "hourly";q=50;w=3600')
    // Same name: the handler's "hourly" replaces the controller's.
    expect(await policy('/layered/hourly')).toBe('"2-per-1m";q=2;w=60, "hourly";q=10;w=3600')
    // Unnamed: the handler's replaces the controller's unnamed one, "hourly" stays.
    expect(await policy('/layered/unnamed')).toBe('"1-per-1m";q=1;w=60, "hourly";q=50;w=3600')
    // Other options override one by one: the controller's key, the handler's headers.
    const legacy = await request(app.getHttpServer()).get('/layered/legacy')
    expect([legacy.headers['x-ratelimit-limit'], legacy.headers['ratelimit-policy']]).toEqual([
      '2',
      undefined,
    ])
  })

  it('stacks two @RateLimit of different names on one handler', async () => {
    const app = await nestApp(platform, global())
    const first = await request(app.getHttpServer()).get('/stacked')
    expect(first.headers['ratelimit-policy']).toBe(
      '"3-per-1m";q=3;w=60, "minute";q=2;w=60, "second";q=1;w=1',
    )
    expect(await statuses(app, '/stacked', 1)).toEqual([429])
  })

  it('answers a refusal with the same headers and body on either platform', async () => {
    const app = await nestApp(platform, global({ limit: 1, window: '30s', block: { for: '5m' } }))
    await request(app.getHttpServer()).get('/a').expect(200)
    const refused = await request(app.getHttpServer()).get('/a')
    const {
      date: _date,
      connection: _c,
      'keep-alive': _k,
      'x-powered-by': _x,
      ...headers
    } = refused.headers
    expect(refused.status).toBe(429)
    expect(headers).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'content-length': '48',
      ...(platform === 'express' ? { etag: expect.any(String) } : {}),
      'ratelimit-policy': '"1-per-30s-block-5m";q=1;w=30',
      ratelimit: '"1-per-30s-block-5m";r=0;t=300',
      'retry-after': '300',
    })
  })

  it('answers problem details as application/problem+json', async () => {
    const app = await nestApp(platform, global({ limit: 1, window: '1m', problemDetails: true }))
    await request(app.getHttpServer()).get('/a').expect(200)
    const refused = await request(app.getHttpServer()).get('/a')
    expect(refused.status).toBe(429)
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(JSON.parse(refused.text)).toMatchObject({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      status: 429,
      'violated-policies': ['1-per-1m'],
    })
  })

  it('publishes a sluice:rate-limit event per decided request, none for skipped ones', async () => {
    const app = await nestApp(platform, global({ limit: 1, window: '1m' }))
    const events = listen<{ policy: string; allowed: boolean; enforced: boolean }>(
      'sluice:rate-limit',
    )
    try {
      await request(app.getHttpServer()).get('/a').expect(200)
      await request(app.getHttpServer()).get('/health').expect(200)
      await request(app.getHttpServer()).get('/a').expect(429)
    } finally {
      events.stop()
    }
    expect(
      events.events.map(({ policy, allowed, enforced }) => [policy, allowed, enforced]),
    ).toEqual([
      ['1-per-1m', true, true],
      ['1-per-1m', false, true],
    ])
  })

  it('refuses nothing in dry run', async () => {
    const app = await nestApp(platform, global({ limit: 1, window: '1m', dryRun: true }))
    expect(await statuses(app, '/a', 3)).toEqual([200, 200, 200])
  })

  it('answers 500 for a throwing key, naming the module and the option; in dry run lets it pass', async () => {
    const key = () => {
      throw new Error('no key today')
    }
    const errors: unknown[] = []
    const report = {
      catch(error: unknown, host: ArgumentsHost) {
        errors.push(error)
        const res = host.switchToHttp().getResponse()
        if (res.raw !== undefined) res.code(500).send()
        else res.status(500).end()
      },
    }
    const failing = await nestApp(platform, global({ limit: 1, key }), (app) =>
      app.useGlobalFilters(report),
    )
    expect((await request(failing.getHttpServer()).get('/a')).status).toBe(500)
    expect(errors.map((error) => (error as Error).message)).toEqual([
      'SluiceModule.forRoot: the "key" function failed: no key today',
    ])
    const warnings = watchWarnings()
    try {
      const dry = await nestApp(platform, global({ limit: 1, key, dryRun: true }))
      expect(await statuses(dry, '/a', 2)).toEqual([200, 200])
    } finally {
      warnings.stop()
    }
    expect(warnings.given.map(([code]) => code)).toEqual(['ERR_SLUICE_DRY_RUN_FAILED'])
  })

  it('counts by the key a subclass finds with getKey', async () => {
    @Injectable()
    class ApiKeyGuard extends SluiceGuard {
      protected override getKey(context: ExecutionContext) {
        return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers[
          'x-api-key'
        ]
      }
    }
    const app = await nestApp(platform, {
      imports: [SluiceModule.forRoot({ limit: 1, window: '1m' })],
      controllers: [AppController],
      providers: [{ provide: APP_GUARD, useClass: ApiKeyGuard }],
    })
    const server = app.getHttpServer()
    await request(server).get('/a').set('x-api-key', 'one').expect(200)
    await request(server).get('/a').set('x-api-key', 'two').expect(200)
    await request(server).get('/a').set('x-api-key', 'one').expect(429)
  })
})

@UseGuards(SluiceGuard)
@Controller('guarded')
class GuardedController {
  @Get()
  get() {
    return 'guarded'
  }
}

@Controller('free')
class FreeController {
  @Get()
  get() {
    return 'free'
  }

  @UseGuards(SluiceGuard)
  @Get('one')
  one() {
    return 'one'
  }
}

@Injectable()
class Config {
  readonly limit = 2
}

@Module({ providers: [Config], exports: [Config] })
class ConfigModule {}

describe.each(platforms)('SluiceModule on %s', (platform) => {
  it('guards one controller or one handler with @UseGuards, sharing the module budget', async () => {
    const app = await nestApp(platform, {
      imports: [SluiceModule.forRoot({ limit: 2, window: '1m' })],
      controllers: [GuardedController, FreeController],
    })
    expect(await statuses(app, '/free', 3)).toEqual([200, 200, 200])
    expect(await statuses(app, '/guarded', 1)).toEqual([200])
    expect(await statuses(app, '/free/one', 2)).toEqual([200, 429])
  })

  it('takes its options from an injected provider with forRootAsync', async () => {
    const app = await nestApp(platform, {
      imports: [
        SluiceModule.forRootAsync({
          imports: [ConfigModule],
          inject: [Config],
          useFactory: (config: Config) => ({ limit: config.limit, window: '1m' }),
        }),
      ],
      controllers: [AppController],
      providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
    })
    expect(await statuses(app, '/a', 3)).toEqual([200, 200, 429])
  })

  it('names the option a bad forRootAsync lacks', () => {
    expect(() => SluiceModule.forRootAsync({} as never)).toThrow(
      'SluiceModule.forRootAsync: "useFactory" must be a function, got undefined',
    )
  })
})

/** A gate the test opens: handlers wait on it to hold their bulkhead slot. */
function gate() {
  let open = () => {}
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { open, opened }
}

let current = gate()
let entered = gate()

@Controller('work')
class WorkController {
  @Bulkhead({ max: 1, maxQueue: 0 })
  @SkipRateLimit()
  @Get()
  async work() {
    entered.open()
    await current.opened
    return 'done'
  }
}

describe.each(platforms)('@Bulkhead on %s', (platform) => {
  it('holds its slot until the response has finished, then frees it', async () => {
    current = gate()
    entered = gate()
    const app = await nestApp(platform, {
      imports: [SluiceModule.forRoot()],
      controllers: [WorkController],
      providers: [{ provide: APP_GUARD, useClass: SluiceGuard }],
    })
    await app.listen(0, '127.0.0.1')
    const server = app.getHttpServer()
    const held = request(server)
      .get('/work')
      .then((r) => r)
    await entered.opened
    const refused = await request(server).get('/work')
    expect(refused.status).toBe(503)
    expect(refused.headers['retry-after']).toBeDefined()
    current.open()
    expect((await held).status).toBe(200)
    entered = gate()
    const again = await request(server).get('/work')
    expect(again.status).toBe(200)
    expect(again.text).toBe('done')
  })
})

describe.each(platforms)('behind a proxy on %s', (platform) => {
  /** Three requests from two clients behind one proxy, and the warnings they gave. */
  async function clients(trustProxy: boolean | number | undefined) {
    const warnings = watchWarnings()
    try {
      const app = await nestApp(platform, global({ limit: 1, window: '1m' }), undefined, {
        ...(trustProxy === undefined ? {} : { trustProxy }),
      })
      const ask = async (client: string) =>
        (await request(app.getHttpServer()).get('/a').set('x-forwarded-for', client)).status
      const statuses = [
        await ask('203.0.113.7'),
        await ask('203.0.113.8'),
        await ask('203.0.113.7'),
      ]
      return { statuses, warnings: warnings.given.map(([code]) => code) }
    } finally {
      warnings.stop()
    }
  }

  it('trusting one proxy, counts each X-Forwarded-For client apart, and warns of nothing', async () => {
    expect(await clients(1)).toEqual({ statuses: [200, 200, 429], warnings: [] })
  })

  it('trusting none, one budget for every client, and a warning that the header came', async () => {
    expect(await clients(undefined)).toEqual({
      statuses: [200, 429, 429],
      warnings: ['ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'],
    })
  })

  it('trusting every proxy, a warning that any client can pick its key', async () => {
    expect(await clients(true)).toEqual({
      statuses: [200, 200, 429],
      warnings: ['ERR_SLUICE_PERMISSIVE_TRUST_PROXY'],
    })
  })
})

describe('stacked @RateLimit', () => {
  it('of one name, or both unnamed, or setting one option twice, throws where the class is defined', () => {
    const define = (upper: RateLimitOptions, lower: RateLimitOptions) => () => {
      class Twice {
        @RateLimit(upper)
        @RateLimit(lower)
        handle() {}
      }
      return Twice
    }
    const advice =
      '; put them in one @RateLimit({ policies: [...] }), or give each policy a name of its own'
    expect(define({ name: 'a', limit: 1 }, { name: 'a', limit: 2 })).toThrow(
      `@RateLimit: two on Twice.handle both state the policy "a"${advice}`,
    )
    expect(define({ limit: 1 }, { limit: 2, window: '1h' })).toThrow(
      `@RateLimit: two on Twice.handle both state an unnamed policy (each would replace the module policy)${advice}`,
    )
    expect(define({ name: 'a', key: keys.global() }, { name: 'b', key: keys.ip() })).toThrow(
      `@RateLimit: two on Twice.handle both set "key"${advice}`,
    )
    expect(define({ limit: () => 1 }, { name: 'b', limit: 2 })).toThrow(
      `@RateLimit: two on Twice.handle where one picks its policies with a function${advice}`,
    )
  })
})

describe('limiters of decorated handlers', () => {
  it('are built at startup, not in the first request (which would warn as made per request)', async () => {
    const warnings = watchWarnings()
    try {
      const app = await nestApp('express', global())
      await request(app.getHttpServer()).get('/strict').expect(200)
      await request(app.getHttpServer()).get('/limited/own').expect(200)
      await request(app.getHttpServer()).get('/pooled').expect(200)
    } finally {
      warnings.stop()
    }
    expect(warnings.given.map(([code]) => code)).toEqual([])
  })
})

describe('decorator options', () => {
  it('are checked when the class is defined, naming the decorator and the option', () => {
    expect(() => RateLimit({ windowMs: 1000 } as never)).toThrow(
      `RateLimit: unknown option "windowMs" (use "window": milliseconds or a string such as '15m')`,
    )
    expect(() => RateLimit({ limit: -1 })).toThrow(/^RateLimit: "limit"/)
    expect(() => Bulkhead({ max: 0 })).toThrow(/^Bulkhead: "max"/)
    expect(() => SkipRateLimit('yes' as never)).toThrow(
      '@SkipRateLimit: "skip" must be a boolean or an array of policy names, got yes',
    )
  })
})
