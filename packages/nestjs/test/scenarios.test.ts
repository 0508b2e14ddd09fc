/**
 * The HTTP scenarios every sluice adapter passes (`runAdapterScenarios`), through Nest on
 * Express and on Fastify. The harness builds each scenario's app as a Nest app: a
 * controller with one handler per route, and one `SluiceGuard` per middleware of the
 * scenario (app-wide ones with `useGlobalGuards`, a route's with `@UseGuards`, in order).
 * A rate limit is a guard whose module options are the middleware's; a bulkhead is a guard
 * that skips rate limits and reads the middleware's options as its handlers' `@Bulkhead()`
 * (through the `Reflector` it is given), so one app can hold several. Scenarios that
 * cannot apply to a guard are skipped with the reason (`NOT_APPLICABLE`).
 */
import { PassThrough } from 'node:stream'
import {
  type ArgumentsHost,
  type CanActivate,
  Catch,
  Controller,
  Get,
  HttpException,
  Post,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common'
import { BaseExceptionFilter, Reflector } from '@nestjs/core'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { Test } from '@nestjs/testing'
import {
  type AdapterHarness,
  type AppSpec,
  type HandlerSpec,
  type MiddlewareSpec,
  middlewareMemo,
  runAdapterScenarios,
} from '@sluice/http/testing'
import { beforeEach } from 'vitest'
import {
  BULKHEAD_METADATA,
  type BulkheadOptions,
  type NestRequest,
  SKIP_RATE_LIMIT_METADATA,
  SluiceGuard,
  SluiceService,
} from '../src/index'
import type { Platform } from './app'

/**
 * Scenarios that test what a guard does not do, by title, with the reason. The rest run
 * as they do for every adapter.
 */
const ONLIMITED_IS_AN_EXCEPTION_FILTER =
  "`onLimited` is not an option of the guard: a refusal is an exception, which Nest's exception filters answer (the guard refuses `onLimited` by name at startup)"

const NOT_APPLICABLE: Record<string, string> = {
  "'draft-8' on a refusal, with Retry-After rounded up and the default body":
    "a refusal's body is Nest's exception body ({ statusCode: 429, message }), not the text 'Too Many Requests'; the headers are checked by guard.test.ts",
  'answers 503 + Retry-After when full, and the slot comes back after the response':
    "a refusal's body is Nest's exception body ({ statusCode: 503, message }), not the text 'Service Unavailable'; guard.test.ts checks the bulkhead's 503",
  'a throwing key function fails naming the "key" option':
    "it expects the error to name the factory `rateLimit`; here the options are SluiceModule.forRoot's, whose name the error carries (guard.test.ts checks this case)",
  'dry run never changes what a client gets: a throwing key or a failing store lets it pass':
    "it expects the events to name the factory `rateLimit`; here the options are SluiceModule.forRoot's, whose name they carry (guard.test.ts checks this case)",
  'a factory handed to the framework uncalled fails saying so':
    'Nest has no middleware factory to hand over uncalled: guards are classes Nest builds',
  "rate limit: an onLimited that throws is a 500 from the framework's error handling; no permit is lost":
    ONLIMITED_IS_AN_EXCEPTION_FILTER,
  "rate limit: an onLimited that rejects is a 500 from the framework's error handling; no permit is lost":
    ONLIMITED_IS_AN_EXCEPTION_FILTER,
  "bulkhead: an onLimited that throws is a 500 from the framework's error handling; the slot stays with its holder":
    ONLIMITED_IS_AN_EXCEPTION_FILTER,
  "bulkhead: an onLimited that rejects is a 500 from the framework's error handling; the slot stays with its holder":
    ONLIMITED_IS_AN_EXCEPTION_FILTER,
}

type Request = NestRequest & { rateLimit?: unknown; bulkhead?: { signal: AbortSignal } }
type Response = {
  raw?: NodeJS.WritableStream & { destroy(): void }
  status?(code: number): { json(body: unknown): void }
  code?(code: number): {
    send(body: unknown): unknown
    type(type: string): { send(body: unknown): unknown }
  }
  destroy?(): void
}

/** Sends a JSON answer the platform's way (the handlers take `@Res()`). */
function json(res: Response, status: number, body: unknown): void {
  if (res.raw !== undefined) res.code!(status).send(body)
  else res.status!(status).json(body)
}

/** A handler doing what `spec` says, in Nest's terms: `(req, res)` by `@Req()` and `@Res()`. */
function handler(spec: HandlerSpec) {
  const decision = (req: Request) => ({ rateLimit: req.rateLimit ?? null })
  switch (spec.kind) {
    case 'json':
      return (req: Request, res: Response) => json(res, 200, decision(req))
    case 'status':
      return (req: Request, res: Response) => json(res, spec.status, decision(req))
    case 'hold':
      return async (req: Request, res: Response) => {
        await spec.gate.enter(req.bulkhead?.signal)
        json(res, 200, decision(req))
      }
    case 'throw':
      return () => {
        throw new Error('handler failed')
      }
    case 'stream':
      return async (req: Request, res: Response) => {
        const body = new PassThrough()
        body.write('first\n')
        if (res.raw !== undefined) {
          void spec.gate.enter(req.bulkhead?.signal).then(() => body.end('last\n'))
          res.code!(200).type('text/plain').send(body)
          return
        }
        body.pipe(res as unknown as NodeJS.WritableStream)
        await spec.gate.enter(req.bulkhead?.signal)
        body.end('last\n')
      }
    case 'destroy':
      return (_req: Request, res: Response) => {
        if (res.raw !== undefined) res.raw.destroy()
        else res.destroy!()
        throw new Error('destroyed')
      }
  }
}

/** A bulkhead's guard reads its options as every handler's `@Bulkhead()`, and skips rate limits. */
class BulkheadMetadata extends Reflector {
  constructor(private readonly options: BulkheadOptions) {
    super()
  }

  override get(): never {
    return undefined as never
  }

  override getAllAndOverride(key: unknown): never {
    if (key === SKIP_RATE_LIMIT_METADATA) return true as never
    return (key === BULKHEAD_METADATA ? this.options : undefined) as never
  }
}

/** One guard (and what the scenario asks of it: the engine with its handles) per middleware. */
function guardOf(spec: MiddlewareSpec): { guard: CanActivate; handles: unknown } {
  if ('uncalled' in spec) throw new TypeError('not applicable to Nest (see NOT_APPLICABLE)')
  if ('rateLimit' in spec) {
    const service = new SluiceService({ validate: false, ...spec.rateLimit } as never)
    return { guard: new SluiceGuard(service, new Reflector()), handles: service.engine }
  }
  const service = new SluiceService()
  return {
    guard: new SluiceGuard(service, new BulkheadMetadata(spec.bulkhead)),
    handles: service.bulkheadFor(spec.bulkhead),
  }
}

/** Tells `onError` of every failure the app's exception handling receives, then answers 500. */
function reportingErrors(onError: (error: unknown) => void) {
  @Catch()
  class ReportErrors extends BaseExceptionFilter {
    override catch(exception: unknown, host: ArgumentsHost) {
      if (exception instanceof HttpException) return super.catch(exception, host)
      onError(exception)
      const res = host.switchToHttp().getResponse<Response & { end?(): void }>()
      if (res.raw !== undefined) res.code!(500).send('')
      else (res.status!(500) as unknown as { end(): void }).end()
    }
  }
  return ReportErrors
}

/** The scenario's app: one controller, a handler per route, the guards in order. */
function controllerOf(
  spec: AppSpec,
  guards: { get(spec: MiddlewareSpec): { guard: CanActivate } },
) {
  class ScenarioController {}
  const prototype = ScenarioController.prototype as unknown as Record<string, unknown>
  spec.routes.forEach((route, i) => {
    const name = `route${i}`
    prototype[name] = handler(route.handler)
    const decorators: MethodDecorator[] = [(route.method === 'get' ? Get : Post)(route.path)]
    if (route.use !== undefined && route.use.length > 0) {
      decorators.push(UseGuards(...route.use.map((use) => guards.get(use).guard)))
    }
    const descriptor = Object.getOwnPropertyDescriptor(prototype, name)!
    Object.defineProperty(
      prototype,
      name,
      Reflect.decorate(decorators, prototype, name, descriptor) as PropertyDescriptor,
    )
    Req()(prototype, name, 0)
    Res()(prototype, name, 1)
  })
  Controller()(ScenarioController)
  return ScenarioController
}

function nestHarness(platform: Platform): AdapterHarness {
  return {
    name: `nestjs on ${platform}`,
    async start(spec: AppSpec) {
      const guards = middlewareMemo(guardOf)
      const moduleRef = await Test.createTestingModule({
        controllers: [controllerOf(spec, guards)],
      }).compile()
      const app =
        platform === 'fastify'
          ? moduleRef.createNestApplication(
              new FastifyAdapter({ trustProxy: spec.trustProxy === true ? '127.0.0.1' : false }),
              { logger: false },
            )
          : moduleRef.createNestApplication({ logger: false })
      if (platform === 'express') {
        app
          .getHttpAdapter()
          .getInstance()
          .set('trust proxy', spec.trustProxy === true ? 'loopback' : false)
      }
      app.useGlobalGuards(...(spec.use ?? []).map((use) => guards.get(use).guard))
      const { onError } = spec
      if (onError !== undefined) {
        const ReportErrors = reportingErrors(onError)
        app.useGlobalFilters(new ReportErrors(app.getHttpAdapter()))
      }
      await app.listen(0, '127.0.0.1')
      const server = app.getHttpServer() as import('node:http').Server
      const address = server.address()
      return {
        port: typeof address === 'object' && address !== null ? address.port : 0,
        close: async () => {
          server.closeAllConnections()
          await app.close()
        },
        middleware: (use: MiddlewareSpec) => guards.get(use).handles,
      }
    },
    header: (req: NestRequest, name) => {
      const value = req.headers[name.toLowerCase()]
      return Array.isArray(value) ? value.join(', ') : value
    },
    status: (_req, res: { statusCode: number }) => res.statusCode,
    // Fastify lower-cases header names.
    headerLines: platform === 'fastify' ? 'fetch' : 'as-set',
  }
}

beforeEach(({ task, skip }) => {
  const reason = NOT_APPLICABLE[task.name]
  if (reason !== undefined) skip(`not applicable to a guard: ${reason}`)
})

runAdapterScenarios(nestHarness('express'))
runAdapterScenarios(nestHarness('fastify'))
