import { durableObjectStore } from '@sluice/cloudflare'
import {
  adaptiveConcurrency,
  bulkheaded,
  concurrency,
  createLimiter,
  fixedWindow,
  leakyBucket,
  rateLimited,
  slidingWindow,
  tokenBucket,
  warmUpTokenBucket,
} from '@sluice/core'
import { denoKvStore } from '@sluice/deno-kv'
import * as express from '@sluice/express'
import * as fastify from '@sluice/fastify'
import * as hono from '@sluice/hono'
import { keys, memoryStore } from '@sluice/http'
import * as koa from '@sluice/koa'
import { redisStore } from '@sluice/redis'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

// Issue 11: every options object of every public function refuses unknown names, and
// every number is checked at construction, never first on a request.

type Rule =
  | 'positive'
  | 'nonNegative'
  | 'duration'
  | 'positiveDuration'
  | 'status'
  | 'ratio'
  | 'cost'
  | 'wait'

interface Subject {
  readonly name: string
  readonly build: (options: Record<string, unknown>) => unknown
  /** Options that make a valid call. */
  readonly base: Record<string, unknown>
  /** Every option name the function accepts. */
  readonly known: readonly string[]
  /** Options whose values have a range, and the rule. */
  readonly ranged: Readonly<Record<string, Rule>>
}

const NOT_A_NUMBER = ['5', null, true, {}, [], () => 1]
const BAD: Record<Rule, readonly unknown[]> = {
  positive: [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, 1e308, ...NOT_A_NUMBER],
  nonNegative: [-1, 0.5, Number.NaN, 2 ** 53, 1e308, ...NOT_A_NUMBER],
  duration: [-1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60, 1e308, '1 minute', '', null, {}],
  positiveDuration: [0, '0s', -1, Number.NaN, 2 ** 60, 1e308, '1 minute', null, {}],
  status: [200, 399, 600, 429.5, Number.NaN, '429', null],
  ratio: [-0.1, 1.1, Number.NaN, '0.5', null],
  // A cost may also be a function of the request; a wait may be Infinity (no bound).
  cost: [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, 1e308, '5', null, true, {}],
  wait: [-1, Number.NaN, 2 ** 60, 1e308, '1 minute', '', null, {}],
}

const limitOptions = ['limit', 'window', 'name', 'clock']

/** The options every store whose state lives elsewhere takes (redisStore, durableObjectStore). */
const remoteStore = {
  known: ['timeout', 'onError', 'onFailure', 'onRecovery', 'leaseTtl', 'probeInterval', 'local'],
  ranged: {
    timeout: 'positiveDuration',
    leaseTtl: 'positiveDuration',
    probeInterval: 'positiveDuration',
  },
} as const satisfies { known: readonly string[]; ranged: Readonly<Record<string, Rule>> }

const core: Subject[] = [
  {
    name: 'tokenBucket',
    build: (o) => tokenBucket(o as never),
    base: { limit: 10 },
    known: [...limitOptions, 'capacity'],
    ranged: { limit: 'positive', capacity: 'positive', window: 'positiveDuration' },
  },
  {
    name: 'leakyBucket',
    build: (o) => leakyBucket(o as never),
    base: { limit: 10 },
    known: limitOptions,
    ranged: { limit: 'positive', window: 'positiveDuration' },
  },
  {
    name: 'slidingWindow',
    build: (o) => slidingWindow(o as never),
    base: { limit: 10 },
    known: [...limitOptions, 'slots'],
    ranged: { limit: 'positive', slots: 'positive', window: 'positiveDuration' },
  },
  {
    name: 'fixedWindow',
    build: (o) => fixedWindow(o as never),
    base: { limit: 10 },
    known: limitOptions,
    ranged: { limit: 'positive', window: 'positiveDuration' },
  },
  {
    name: 'warmUpTokenBucket',
    build: (o) => warmUpTokenBucket(o as never),
    base: { limit: 10, warmUp: '1s' },
    known: [...limitOptions, 'capacity', 'warmUp'],
    ranged: {
      limit: 'positive',
      capacity: 'positive',
      window: 'positiveDuration',
      warmUp: 'duration',
    },
  },
  {
    name: 'concurrency',
    build: (o) => concurrency(o as never),
    base: { max: 2 },
    known: ['max', 'maxQueue', 'name', 'clock'],
    ranged: { max: 'positive', maxQueue: 'nonNegative' },
  },
  {
    name: 'createLimiter',
    build: (o) => createLimiter(o as never),
    base: { algorithm: 'sliding-window', limit: 10 },
    known: ['algorithm', ...limitOptions, 'slots'],
    ranged: { limit: 'positive', slots: 'positive', window: 'positiveDuration' },
  },
  {
    name: 'adaptiveConcurrency',
    build: (o) => adaptiveConcurrency(o as never),
    base: { algorithm: 'gradient2' },
    known: [
      'algorithm',
      'initial',
      'min',
      'max',
      'maxQueue',
      'updateInterval',
      'probeInterval',
      'probeJitter',
      'probeConcurrency',
      'probeSamples',
      'onLimitChange',
      'random',
      'name',
      'clock',
      'tolerance',
      'smoothing',
      'queueSize',
    ],
    ranged: {
      min: 'positive',
      max: 'positive',
      initial: 'positive',
      probeConcurrency: 'positive',
      probeSamples: 'positive',
      updateInterval: 'positiveDuration',
      probeInterval: 'positiveDuration',
      probeJitter: 'ratio',
    },
  },
  {
    name: 'rateLimited',
    build: (o) => rateLimited(tokenBucket({ limit: 1 }), o as never),
    base: {},
    known: ['wait', 'cost'],
    ranged: { cost: 'cost', wait: 'wait' },
  },
  {
    name: 'bulkheaded',
    build: (o) => bulkheaded(concurrency({ max: 1 }), o as never),
    base: {},
    known: ['wait'],
    ranged: { wait: 'wait' },
  },
  {
    name: 'memoryStore',
    build: (o) => memoryStore(o as never),
    base: {},
    known: ['maxKeys', 'clock'],
    ranged: { maxKeys: 'positive' },
  },
  {
    name: 'redisStore',
    // A sendCommand function is a client too: nothing connects, nothing is sent.
    build: (o) => redisStore(o as never),
    base: { client: async () => 'OK' },
    // `clock` is for tests only (the scripts decide on the time it gives).
    known: ['client', 'prefix', ...remoteStore.known, 'clock'],
    ranged: remoteStore.ranged,
  },
  {
    name: 'durableObjectStore',
    // Nothing is asked of the binding until the first call.
    build: (o) => durableObjectStore(o as never),
    base: { namespace: { idFromName: () => ({}), get: () => ({ fetch }) } },
    known: ['namespace', 'shards', 'prefix', ...remoteStore.known],
    ranged: { shards: 'positive', ...remoteStore.ranged },
  },
  {
    name: 'denoKvStore',
    build: (o) => denoKvStore(o as never),
    base: { kv: { getMany: async () => [], atomic: () => ({}) } },
    known: ['kv', 'prefix', 'leaseTtl', 'attempts', 'clock'],
    ranged: { leaseTtl: 'positiveDuration', attempts: 'positive' },
  },
  {
    name: 'keys.ip',
    build: (o) => keys.ip(o as never),
    base: {},
    known: ['ipv6Subnet', 'getIp'],
    ranged: { ipv6Subnet: 'positive' },
  },
]

const rateLimitKnown = [
  'algorithm',
  'limit',
  'window',
  'capacity',
  'slots',
  'warmUp',
  'block',
  'name',
  'policies',
  'key',
  'cost',
  'headers',
  'wait',
  'skip',
  'refundWhen',
  'statusCode',
  'message',
  'store',
  'clock',
  'dryRun',
  'problemDetails',
  'onLimited',
]
const bulkheadKnown = [
  'max',
  'maxQueue',
  'queueTimeout',
  'key',
  'statusCode',
  'headers',
  'message',
  'name',
  'retryAfter',
  'store',
  'clock',
  'problemDetails',
  'onLimited',
]
const adapters = [
  { name: 'express', mod: express, extra: ['validate'], bulkheadExtra: [] },
  { name: 'koa', mod: koa, extra: ['validate'], bulkheadExtra: [] },
  { name: 'hono', mod: hono, extra: ['validate', 'getIp'], bulkheadExtra: ['validate', 'getIp'] },
  { name: 'fastify', mod: fastify, extra: [], bulkheadExtra: [] },
] as const

const http: Subject[] = adapters.flatMap(({ name, mod, extra, bulkheadExtra }) => [
  {
    name: `${name} rateLimit`,
    build: (o) => mod.rateLimit(o as never),
    base: {},
    known: [...rateLimitKnown, ...extra],
    ranged: {
      limit: 'cost',
      cost: 'cost',
      window: 'positiveDuration',
      statusCode: 'status',
    },
  },
  {
    name: `${name} rateLimit (token bucket)`,
    build: (o) => mod.rateLimit({ algorithm: 'token-bucket', ...o } as never),
    base: {},
    known: [...rateLimitKnown, ...extra],
    ranged: { capacity: 'positive' },
  },
  {
    name: `${name} bulkhead`,
    build: (o) => mod.bulkhead(o as never),
    base: {},
    known: [...bulkheadKnown, ...bulkheadExtra],
    ranged: {
      max: 'positive',
      maxQueue: 'nonNegative',
      queueTimeout: 'duration',
      retryAfter: 'positiveDuration',
      statusCode: 'status',
    },
  },
])

let spy: ReturnType<typeof vi.spyOn>
beforeAll(() => {
  // Small windows and the like warn; this test is about what throws.
  spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
})
afterAll(() => spy.mockRestore())

/** A name no function knows: any string, including prototype names, minus the known ones. */
const unknownName = (known: readonly string[]) =>
  fc
    .oneof(
      fc.string({ minLength: 1, maxLength: 24 }),
      fc.constantFrom('__proto__', 'constructor', 'toString', 'windowMs', 'max', 'limt', 'maxkeys'),
    )
    .filter((name) => !known.includes(name))

describe.each([...core, ...http])('$name', (subject) => {
  it('accepts its base options', () => {
    expect(() => subject.build({ ...subject.base })).not.toThrow()
  })

  it('refuses any unknown option name, naming it', () => {
    fc.assert(
      fc.property(unknownName(subject.known), fc.anything(), (name, value) => {
        const options = { ...subject.base }
        Object.defineProperty(options, name, { value, enumerable: true })
        expect(() => subject.build(options)).toThrow(
          new RegExp(`unknown option "${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`),
        )
      }),
      { numRuns: 60 },
    )
  })

  for (const [option, rule] of Object.entries(subject.ranged)) {
    it(`refuses an out-of-range "${option}" (${rule}) at construction, naming it`, () => {
      for (const value of BAD[rule]) {
        let thrown: unknown
        try {
          subject.build({ ...subject.base, [option]: value })
        } catch (error) {
          thrown = error
        }
        expect(thrown, `${subject.name} ${option}: ${String(value)}`).toBeInstanceOf(Error)
        expect(thrown instanceof TypeError || thrown instanceof RangeError).toBe(true)
        expect((thrown as Error).message).toContain(`"${option}"`)
      }
    })
  }
})
