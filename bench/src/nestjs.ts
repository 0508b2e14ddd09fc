/**
 * `pnpm bench:nestjs` (and `pnpm bench`'s processes section): the same Nest app behind
 * sluice's guard and behind @nestjs/throttler's, with a baseline without a guard, on the
 * Express and the Fastify platform, by the method of the HTTP overhead section
 * (http.ts): each app is served by a child process of its own (this file, given the app
 * to serve), the load comes from this process with autocannon, every app is warmed up,
 * then measured in rounds whose order rotates (no app always runs first, or right after
 * the same neighbour), and each run reads the server's own CPU time
 * (`process.cpuUsage`), which the machine's other load cannot inflate the way it does
 * req/s. Medians with their min–max over the rounds; ratios are taken round by round.
 *
 * The limit is never reached, so every request is admitted and what is measured is the
 * guard's cost on the common path; see `RATE` for why it is 1,000,000 per second.
 *
 * Written without decorator syntax (`Reflect.decorate`); the servers run tsx with
 * packages/nestjs's tsconfig, whose legacy decorators @sluice/nestjs's source needs.
 * `BENCH_QUICK=1` shortens every run, for a check of the harness; `BENCH_FRAMEWORKS=fastify`
 * measures one platform.
 */
import 'reflect-metadata'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Child, errorText, type Message, serve } from './child'
import { FRAMEWORK_FILTER, HTTP, QUICK } from './config'
import { type LoadResult, load, probe } from './http-load'
import { pairedRatio, type Summary, summarize } from './stats'

type Platform = 'express' | 'fastify'
/** Both, or those `BENCH_FRAMEWORKS` names. */
const PLATFORMS = (['express', 'fastify'] as const).filter(
  (p) => FRAMEWORK_FILTER === undefined || FRAMEWORK_FILTER.includes(p),
)
const CONTENDERS = ['no guard', '@sluice/nestjs', '@nestjs/throttler'] as const
type Contender = (typeof CONTENDERS)[number]

/**
 * Both guards allow 1,000,000 requests per 1-second window per client; the load is one
 * client (the loopback address) making a few thousand requests a second at most, so the
 * limit is never reached. The window is short for @nestjs/throttler's sake: its memory
 * storage keeps one expiry time per hit for `ttl` and filters that list on every request,
 * so its cost per request grows with the hits one key made within `ttl`. With 1 s the
 * list holds about one second of this load (bounded, as a busy client's would be); with
 * a minute or an hour it would grow through the whole run and measure that instead.
 */
const RATE = { limit: 1_000_000, ttlMs: 1000 } as const

/**
 * Responses each server gives before it is measured (in runs of `HTTP.warmup` seconds, at
 * most ten): the JIT warms by calls, not by seconds, and on a busy machine a few seconds
 * of Nest on Express are a few hundred requests, which left the first rounds measuring
 * the interpreter.
 */
const WARM_RESPONSES = QUICK ? 2_000 : 20_000

const require = createRequire(import.meta.url)

/** The hello-world app of one contender, as a Nest root module. */
async function appModule(contender: Contender) {
  const { Controller, Get, Module } = await import('@nestjs/common')
  const { APP_GUARD } = await import('@nestjs/core')
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
  let imports: unknown[] = []
  let guard: unknown
  if (contender === '@sluice/nestjs') {
    const { SluiceGuard, SluiceModule } = await import('@sluice/nestjs')
    imports = [SluiceModule.forRoot({ limit: RATE.limit, window: RATE.ttlMs })]
    guard = SluiceGuard
  } else if (contender === '@nestjs/throttler') {
    const { ThrottlerGuard, ThrottlerModule } = await import('@nestjs/throttler')
    imports = [ThrottlerModule.forRoot([{ ttl: RATE.ttlMs, limit: RATE.limit }])]
    guard = ThrottlerGuard
  }
  class AppModule {}
  Reflect.decorate(
    [
      Module({
        imports: imports as never,
        controllers: [HelloController],
        providers: guard === undefined ? [] : [{ provide: APP_GUARD, useClass: guard as never }],
      }),
    ],
    AppModule,
  )
  return AppModule
}

/** The child side: serves one app and reports its CPU time when asked. */
async function server(platform: Platform, contender: Contender): Promise<void> {
  const { NestFactory } = await import('@nestjs/core')
  const module = await appModule(contender)
  const app =
    platform === 'fastify'
      ? await NestFactory.create(
          module,
          new (await import('@nestjs/platform-fastify')).FastifyAdapter(),
          { logger: false },
        )
      : await NestFactory.create(module, { logger: false })
  await app.listen(0, '127.0.0.1')
  serve(async (message: Message): Promise<Message> => {
    if (message.type !== 'cpu') throw new Error(`nestjs.ts: unknown request "${message.type}"`)
    const { user, system } = process.cpuUsage()
    return { type: 'cpu', us: user + system }
  })
  process.send?.({ type: 'listening', port: (app.getHttpServer().address() as AddressInfo).port })
}

/** One load run, with the server's CPU per request it answered. */
interface ServerRun extends LoadResult {
  readonly cpuUs: number
}

async function run(child: Child, seconds: number): Promise<ServerRun> {
  const before = Number((await child.request({ type: 'cpu' }, 'cpu')).us)
  const result = await load(Number(child.ready.port), seconds, HTTP.connections)
  const after = Number((await child.request({ type: 'cpu' }, 'cpu')).us)
  return { ...result, cpuUs: (after - before) / result.responses }
}

/** The versions measured, as installed for the bench. */
function versions(): string {
  const version = (name: string, from?: string) => {
    const resolver = from === undefined ? require : createRequire(require.resolve(from))
    return (resolver(`${name}/package.json`) as { version: string }).version
  }
  return [
    `@nestjs/core ${version('@nestjs/core')}`,
    `@nestjs/platform-express ${version('@nestjs/platform-express')} (express ${version('express', '@nestjs/platform-express')})`,
    `@nestjs/platform-fastify ${version('@nestjs/platform-fastify')} (fastify ${version('fastify', '@nestjs/platform-fastify')})`,
    `@nestjs/throttler ${version('@nestjs/throttler')}`,
    `Node ${process.version}`,
  ].join(', ')
}

const range = (s: Summary, digits = 0) =>
  `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`

/** One platform: every contender in a server of its own, measured in rotating rounds. */
async function measure(platform: Platform): Promise<string[]> {
  const servers = new Map<Contender, Child>()
  const headers = new Map<Contender, string[]>()
  try {
    for (const contender of CONTENDERS) {
      const child = await Child.start(
        'nestjs.ts',
        [JSON.stringify({ platform, contender })],
        'listening',
        { timeoutMs: 60_000 },
      )
      servers.set(contender, child)
      const answer = await probe(Number(child.ready.port))
      if (answer.status !== 200) {
        throw new Error(`${platform}/${contender} answered ${answer.status} to one request`)
      }
      headers.set(contender, answer.rateLimitHeaders)
      let warmed = 0
      for (let i = 0; i < 10 && warmed < WARM_RESPONSES; i++) {
        warmed += (await run(child, HTTP.warmup)).responses
      }
    }
    const runs = new Map<Contender, ServerRun[]>(CONTENDERS.map((c) => [c, []]))
    for (let round = 0; round < HTTP.rounds; round++) {
      // Rotated: round r starts with the r-th contender.
      const order = CONTENDERS.map((_, i) => CONTENDERS[(i + round) % CONTENDERS.length]!)
      for (const contender of order) {
        runs.get(contender)!.push(await run(servers.get(contender)!, HTTP.duration))
      }
      const line = CONTENDERS.map((c) => {
        const last = runs.get(c)!.at(-1)!
        return `${c} ${Math.round(last.rps)} req/s ${last.cpuUs.toFixed(0)} µs`
      })
      process.stderr.write(`${platform} round ${round + 1}/${HTTP.rounds}: ${line.join(', ')}\n`)
    }
    const bare = runs.get('no guard')!
    const lines = [
      `### ${platform}`,
      '',
      '| app | req/s | × no guard | server CPU µs/request | added CPU µs/request | p99 ms | failures | headers sent |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ]
    for (const contender of CONTENDERS) {
      const own = runs.get(contender)!
      const guarded = contender !== 'no guard'
      const vsBare = pairedRatio(
        own.map((r) => r.rps),
        bare.map((r) => r.rps),
      )
      const added = summarize(own.map((r, i) => r.cpuUs - bare[i]!.cpuUs))
      lines.push(
        `| ${contender} | ${range(summarize(own.map((r) => r.rps)))} | ${guarded ? range(vsBare, 2) : '1'} | ${range(summarize(own.map((r) => r.cpuUs)))} | ${guarded ? range(added) : '0'} | ${range(summarize(own.map((r) => r.p99Ms)), 1)} | ${own.reduce((sum, r) => sum + r.failures, 0)} | ${(headers.get(contender) ?? []).join(', ') || 'none'} |`,
      )
    }
    const sluice = runs.get('@sluice/nestjs')!
    const throttler = runs.get('@nestjs/throttler')!
    const rps = pairedRatio(
      sluice.map((r) => r.rps),
      throttler.map((r) => r.rps),
    )
    const cpu = pairedRatio(
      sluice.map((r) => r.cpuUs),
      throttler.map((r) => r.cpuUs),
    )
    lines.push(
      '',
      `sluice against @nestjs/throttler, round by round: req/s ×${range(rps, 2)}, server CPU per request ×${range(cpu, 2)} (below 1: cheaper).`,
      '',
    )
    return lines
  } finally {
    await Promise.all([...servers.values()].map((child) => child.close()))
  }
}

async function main(): Promise<void> {
  // The servers compile @sluice/nestjs's source, which needs legacy decorators.
  process.env.TSX_TSCONFIG_PATH ??= fileURLToPath(
    new URL('../../packages/nestjs/tsconfig.json', import.meta.url),
  )
  const out = [
    `Each app in a child process, ${HTTP.connections} connections from this one, warmed up by at least ${WARM_RESPONSES.toLocaleString('en-US')} requests (or ${10 * HTTP.warmup} s), then ${HTTP.rounds} rounds of ${HTTP.duration} s per app, the order rotating each round${QUICK ? ' (BENCH_QUICK: a check of the harness, not results)' : ''}. ${versions()}.`,
    '',
    `Both guards allow ${RATE.limit.toLocaleString('en-US')} requests per ${RATE.ttlMs / 1000} s per client, which this load never reaches: every request is admitted, and the cost measured is each guard's on that path. The window is 1 s because @nestjs/throttler's memory storage keeps an expiry time per hit for its ttl and filters that list on every request: at 1 s it holds about a second of this load, as for a busy client; with a longer ttl it would grow through the whole run.`,
    '',
  ]
  for (const platform of PLATFORMS) out.push(...(await measure(platform)))
  process.stdout.write(`${out.join('\n')}\n`)
}

const spec = process.argv[2]
if (spec !== undefined && process.send !== undefined) {
  const { platform, contender } = JSON.parse(spec) as { platform: Platform; contender: Contender }
  server(platform, contender).catch((error: unknown) => {
    process.send?.({ type: 'error', message: errorText(error) })
    process.exitCode = 1
    process.disconnect?.()
  })
} else {
  await main()
}
