import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo'
import { Injectable, type ModuleMetadata } from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import { GraphQLModule, Mutation, Query, Resolver } from '@nestjs/graphql'
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius'
import { ManualClock } from '@sluice/core'
import request from 'supertest'
import { describe, expect, it } from 'vitest'
import {
  Bulkhead,
  type NestResponse,
  RateLimit,
  SkipRateLimit,
  SluiceGuard,
  SluiceModule,
  type SluiceModuleOptions,
} from '../src/index'
import { nestApp, type Platform } from './app'

const typeDefs = /* GraphQL */ `
  type Query {
    hello: String
    health: String
    report: String
  }
  type Mutation {
    login: Boolean
  }
`

@Resolver()
class AppResolver {
  @Query()
  hello() {
    return 'hello'
  }

  @SkipRateLimit()
  @Query()
  health() {
    return 'ok'
  }

  @Bulkhead({ max: 1 })
  @SkipRateLimit()
  @Query()
  report() {
    return 'report'
  }

  @RateLimit({ name: 'login', limit: 2, window: '15m' })
  @Mutation()
  login() {
    return true
  }
}

/** GraphQL over HTTP as Apollo on Express and Mercurius on Fastify serve it. */
const servers: Record<Platform, { name: string; graphql: () => ModuleMetadata['imports'] }> = {
  express: {
    name: 'Apollo on Express',
    graphql: () => [GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, typeDefs })],
  },
  fastify: {
    name: 'Mercurius on Fastify',
    graphql: () => [
      GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, typeDefs }),
    ],
  },
}

interface GraphQLReply {
  data?: Record<string, unknown> | null
  errors?: { message: string; path?: string[]; extensions?: Record<string, unknown> }[]
}

describe.each(['express', 'fastify'] as const)(
  'SluiceGuard on GraphQL resolvers (%s)',
  (platform) => {
    const { name, graphql } = servers[platform]
    const app = (options: SluiceModuleOptions = { limit: 3, window: '1m' }) =>
      nestApp(platform, {
        imports: [
          SluiceModule.forRoot({ clock: new ManualClock(), ...options }),
          ...(graphql() ?? []),
        ],
        providers: [AppResolver, { provide: APP_GUARD, useClass: SluiceGuard }],
      })
    const query = async (server: unknown, text: string) => {
      const res = await request(server as never)
        .post('/graphql')
        .set('content-type', 'application/json')
        .send({ query: text })
      return { res, body: res.body as GraphQLReply }
    }

    it(`${name}: limits a global guard's resolvers, with the headers on the HTTP response`, async () => {
      const server = (await app()).getHttpServer()
      const first = await query(server, '{ hello }')
      expect(first.body).toEqual({ data: { hello: 'hello' } })
      expect(first.res.headers['ratelimit-policy']).toBe('"3-per-1m";q=3;w=60')
      expect(first.res.headers.ratelimit).toBe('"3-per-1m";r=2;t=66')
      await query(server, '{ hello }')
      await query(server, '{ hello }')
      const refused = await query(server, '{ hello }')
      // Refused resolver calls are GraphQL errors, in a 200 answer like any resolver's.
      expect(refused.res.status).toBe(200)
      expect(refused.res.headers['retry-after']).toBe('66')
      expect(refused.res.headers.ratelimit).toBe('"3-per-1m";r=0;t=66')
      expect(refused.body.data).toEqual({ hello: null })
      expect(
        refused.body.errors?.map(({ message, path, extensions }) => ({
          message,
          path,
          code: extensions?.code,
          status: extensions?.status,
          retryAfterMs: extensions?.retryAfterMs,
        })),
      ).toEqual([
        {
          message: 'Too Many Requests',
          path: ['hello'],
          code: 'RATE_LIMITED',
          status: 429,
          retryAfterMs: 66_000,
        },
      ])
    })

    it(`${name}: counts each guarded call, so aliases cannot multiply a budget`, async () => {
      const server = (await app()).getHttpServer()
      const { body } = await query(server, 'mutation { a: login b: login c: login }')
      expect(body.data).toEqual({ a: true, b: true, c: null })
      expect(body.errors?.map((e) => [e.path, e.extensions?.code])).toEqual([
        [['c'], 'RATE_LIMITED'],
      ])
      // The two logins admitted took two of the module's three as well; the refused one, none.
      expect((await query(server, '{ hello }')).body).toEqual({ data: { hello: 'hello' } })
      const after = await query(server, '{ hello }')
      expect(after.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED')
    })

    it(`${name}: skips @SkipRateLimit() resolvers, and holds a @Bulkhead() slot per call`, async () => {
      const server = (await app({ limit: 1, window: '1m' })).getHttpServer()
      const { body } = await query(server, '{ health h2: health }')
      expect(body).toEqual({ data: { health: 'ok', h2: 'ok' } })
      // max 1: the second call of one request finds the slot taken until the answer is sent.
      const pooled = await query(server, '{ report r2: report }')
      expect(pooled.body.data).toEqual({ report: 'report', r2: null })
      expect(pooled.body.errors?.map((e) => [e.message, e.extensions?.code])).toEqual([
        ['Service Unavailable', 'SERVICE_UNAVAILABLE'],
      ])
      expect((await query(server, '{ report }')).body).toEqual({ data: { report: 'report' } })
    })

    it(`${name}: refuses nothing in dry run`, async () => {
      const server = (await app({ limit: 1, window: '1m', dryRun: true })).getHttpServer()
      const { body } = await query(server, '{ a: hello b: hello c: hello }')
      expect(body).toEqual({ data: { a: 'hello', b: 'hello', c: 'hello' } })
    })
  },
)

/** A guard whose GraphQL context holds no response, as Apollo's on Fastify by default. */
@Injectable()
class NoResponseGuard extends SluiceGuard {
  protected override getResponse(): NestResponse {
    return undefined as never
  }
}

describe('SluiceGuard on a GraphQL context without a response', () => {
  it('limits without headers, and says what a bulkhead needs', async () => {
    const app = await nestApp('express', {
      imports: [
        SluiceModule.forRoot({ clock: new ManualClock(), limit: 1, window: '1m' }),
        GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, typeDefs }),
      ],
      providers: [AppResolver, { provide: APP_GUARD, useClass: NoResponseGuard }],
    })
    const send = (query: string) => request(app.getHttpServer()).post('/graphql').send({ query })
    const first = await send('{ hello }')
    expect([first.body, first.headers.ratelimit]).toEqual([{ data: { hello: 'hello' } }, undefined])
    const refused = await send('{ hello }')
    expect(refused.body.errors[0].extensions).toMatchObject({
      code: 'RATE_LIMITED',
      retryAfterMs: 66_000,
    })
    const pooled = await send('{ report }')
    expect(pooled.body.errors[0].message).toBe(
      '@sluice/nestjs: @Bulkhead() needs the HTTP response, which this GraphQL context does not hold: add it (Apollo on Fastify: context: (req, reply) => ({ req, reply })), or override SluiceGuard.getResponse(context)',
    )
  })
})
