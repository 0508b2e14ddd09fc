import diagnostics from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import { metrics } from '@opentelemetry/api'
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  type MetricData,
  MetricReader,
} from '@opentelemetry/sdk-metrics'
import { adaptiveConcurrency, ManualClock } from '@sluice/core'
import { memoryStore } from '@sluice/http'
import {
  BulkheadEngine,
  type Outcome,
  RateLimitEngine,
  type RequestAccessors,
  type ResponseAccessors,
} from '@sluice/http/adapter'
import { storeChannel } from '@sluice/keyed/store'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Instrumentation, instrument, VERSION } from './instrument'

/** A reader the test collects from when it wants to look. */
class TestReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve()
  }
}

interface FakeRequest {
  readonly ip: string
  gone?: AbortController
}

const request: RequestAccessors<FakeRequest> = {
  ip: (req) => req.ip,
  method: () => 'GET',
  path: () => '/',
  route: () => undefined,
  header: () => undefined,
}
const response: ResponseAccessors<FakeRequest, unknown> = {
  getHeader: () => undefined,
  setHeader: () => {},
  signal: (req) => {
    req.gone ??= new AbortController()
    return req.gone.signal
  },
}

/** A request from one client address: a key that must never turn up in an attribute. */
const from = (ip: string): FakeRequest => ({ ip })

let reader: TestReader
let provider: MeterProvider
let running: Instrumentation | undefined

beforeEach(() => {
  reader = new TestReader()
  provider = new MeterProvider({ readers: [reader] })
  running = undefined
})

afterEach(async () => {
  running?.stop()
  await provider.shutdown()
})

const start = () => {
  running = instrument({ meterProvider: provider })
  return running
}

/** Every metric the package recorded so far, by name. */
async function collect(): Promise<Map<string, MetricData>> {
  const { resourceMetrics, errors } = await reader.collect()
  expect(errors).toEqual([])
  const scopes = resourceMetrics.scopeMetrics.filter((s) => s.scope.name === '@sluice/otel')
  return new Map(scopes.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m]))
}

/** A metric's points as `[attributes, value]`, in a stable order. */
async function points(name: string): Promise<[Record<string, unknown>, unknown][]> {
  const metric = (await collect()).get(name)
  if (metric === undefined) return []
  return (metric.dataPoints as DataPoint<unknown>[])
    .map((p): [Record<string, unknown>, unknown] => [p.attributes, p.value])
    .sort(([a], [b]) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
}

/** A histogram's points as `[attributes, count, sum]`. */
async function histogram(name: string): Promise<[Record<string, unknown>, number, number][]> {
  return (await points(name)).map(([attributes, value]) => {
    const { count, sum } = value as Histogram
    return [attributes, count, sum ?? Number.NaN]
  })
}

const policy = (name: string) => ({ 'sluice.rate_limiting.policy': name })
const decided = (name: string, result: string) => ({
  'sluice.rate_limiting.policy': name,
  'sluice.rate_limiting.result': result,
})

describe('instrument(): rate-limit decisions', () => {
  it('counts acquired and refused requests by policy, never by key', async () => {
    start()
    const clock = new ManualClock()
    const engine = new RateLimitEngine({
      options: { name: 'api', limit: 2, window: '1m', clock, store: memoryStore({ clock }) },
      request,
      response,
    })
    const outcomes: Outcome[] = []
    for (const ip of ['10.0.0.1', '10.0.0.1', '10.0.0.1', '10.0.0.2']) {
      outcomes.push(await engine.admit(from(ip), undefined))
    }
    expect(outcomes.map((o) => o.action)).toEqual(['pass', 'pass', 'refuse', 'pass'])

    expect(await points('sluice.rate_limiting.requests')).toEqual([
      [decided('api', 'acquired'), 3],
      [decided('api', 'refused'), 1],
    ])
    const descriptor = (await collect()).get('sluice.rate_limiting.requests')?.descriptor
    expect(descriptor).toMatchObject({ unit: '{request}', type: 'COUNTER' })
  })

  it('counts a dry run refusal as would_refuse, and a dry run pass as acquired', async () => {
    start()
    const clock = new ManualClock()
    const engine = new RateLimitEngine({
      options: { name: 'preview', limit: 1, window: '1m', dryRun: true, clock },
      request,
      response,
    })
    const first = await engine.admit(from('10.0.0.1'), undefined)
    const second = await engine.admit(from('10.0.0.1'), undefined)
    expect([first.action, second.action]).toEqual(['pass', 'pass'])
    expect(second.decision).toMatchObject({ allowed: false, enforced: false })

    expect(await points('sluice.rate_limiting.requests')).toEqual([
      [decided('preview', 'acquired'), 1],
      [decided('preview', 'would_refuse'), 1],
    ])
  })

  it('names the refusing policy when several are checked together', async () => {
    start()
    const clock = new ManualClock()
    const engine = new RateLimitEngine({
      options: {
        policies: [
          { name: 'burst', limit: 2, window: '1s' },
          { name: 'hourly', limit: 100, window: '1h' },
        ],
        clock,
      },
      request,
      response,
    })
    for (let i = 0; i < 3; i++) await engine.admit(from('10.0.0.1'), undefined)

    // A pass shows the policy with the fewest permits left: 'burst' here too.
    expect(await points('sluice.rate_limiting.requests')).toEqual([
      [decided('burst', 'acquired'), 2],
      [decided('burst', 'refused'), 1],
    ])
  })

  it('records nothing for skipped requests', async () => {
    start()
    const engine = new RateLimitEngine({
      options: { limit: 1, skip: () => true },
      request,
      response,
    })
    expect((await engine.admit(from('10.0.0.1'), undefined)).action).toBe('skip')
    expect(await points('sluice.rate_limiting.requests')).toEqual([])
  })
})

describe('instrument(): bulkheads', () => {
  const setup = () => {
    start()
    const clock = new ManualClock()
    const engine = new BulkheadEngine({
      options: { name: 'reports', max: 1, maxQueue: 1, queueTimeout: '2s', clock },
      request,
      response,
    })
    return { clock, engine }
  }

  it('follows leases and the queue as requests enter, wait, time out and leave', async () => {
    const { clock, engine } = setup()
    const first = await engine.admit(from('10.0.0.1'), undefined)
    const second = engine.admit(from('10.0.0.2'), undefined)
    const third = await engine.admit(from('10.0.0.3'), undefined)
    expect([first.action, third.action]).toEqual(['pass', 'refuse'])

    // One slot held, one waiting, one refused because the queue was full.
    expect(await points('sluice.rate_limiting.active_request_leases')).toEqual([
      [policy('reports'), 1],
    ])
    expect(await points('sluice.rate_limiting.queued_requests')).toEqual([[policy('reports'), 1]])

    await clock.advanceAsync(500)
    first.workDone(false)
    first.done(false)
    const entered = await second
    expect(entered.action).toBe('pass')

    expect(await points('sluice.rate_limiting.active_request_leases')).toEqual([
      [policy('reports'), 1],
    ])
    expect(await points('sluice.rate_limiting.queued_requests')).toEqual([[policy('reports'), 0]])
    expect(await histogram('sluice.rate_limiting.request.time_in_queue')).toEqual([
      [decided('reports', 'acquired'), 1, 0.5],
    ])
    expect(await histogram('sluice.rate_limiting.request_lease.duration')).toEqual([
      [policy('reports'), 1, 0.5],
    ])

    // The next one waits its full 2 s and is refused: a timeout, then a reject.
    const late = engine.admit(from('10.0.0.4'), undefined)
    await clock.advanceAsync(2_000)
    expect((await late).action).toBe('refuse')
    await clock.advanceAsync(250)
    entered.workDone(false)
    entered.done(false)

    expect(await points('sluice.rate_limiting.requests')).toEqual([
      [decided('reports', 'acquired'), 2],
      [decided('reports', 'refused'), 2],
    ])
    expect(await points('sluice.rate_limiting.active_request_leases')).toEqual([
      [policy('reports'), 0],
    ])
    expect(await points('sluice.rate_limiting.queued_requests')).toEqual([[policy('reports'), 0]])
    expect(await histogram('sluice.rate_limiting.request.time_in_queue')).toEqual([
      [decided('reports', 'acquired'), 1, 0.5],
      [decided('reports', 'refused'), 1, 2],
    ])
    expect(await histogram('sluice.rate_limiting.request_lease.duration')).toEqual([
      [policy('reports'), 2, 0.5 + 2.25],
    ])
  })

  it('buckets waits in seconds, not in the SDK default made for milliseconds', async () => {
    const { clock, engine } = setup()
    const first = await engine.admit(from('10.0.0.1'), undefined)
    const second = engine.admit(from('10.0.0.2'), undefined)
    await clock.advanceAsync(30)
    first.workDone(false)
    first.done(false)
    const secondIn = await second
    secondIn.workDone(false)
    secondIn.done(false)

    const time = (await collect()).get('sluice.rate_limiting.request.time_in_queue')!
    expect(time.descriptor).toMatchObject({ unit: 's', type: 'HISTOGRAM' })
    const [point] = time.dataPoints as DataPoint<Histogram>[]
    const { boundaries, counts } = point!.value.buckets
    expect(boundaries).toEqual([
      0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
    ])
    // 0.03 s lands in (0.025, 0.05].
    expect(counts[boundaries.indexOf(0.05)]).toBe(1)
  })

  it('lowers queued_requests when a queued client leaves, counted as canceled', async () => {
    const { clock, engine } = setup()
    const first = await engine.admit(from('10.0.0.1'), undefined)
    const quitter = from('10.0.0.2')
    const waiting = engine.admit(quitter, undefined)
    expect(await points('sluice.rate_limiting.queued_requests')).toEqual([[policy('reports'), 1]])
    await clock.advanceAsync(300)
    quitter.gone?.abort(new Error('client left'))
    await expect(waiting).rejects.toThrow('client left')
    expect(await points('sluice.rate_limiting.queued_requests')).toEqual([[policy('reports'), 0]])
    expect(await points('sluice.rate_limiting.requests')).toEqual([
      [decided('reports', 'acquired'), 1],
      [decided('reports', 'canceled'), 1],
    ])
    expect(await histogram('sluice.rate_limiting.request.time_in_queue')).toEqual([
      [decided('reports', 'canceled'), 1, 0.3],
    ])
    first.workDone(false)
    first.done(false)
  })

  it("reports an adaptive limiter's limit each time it moves", async () => {
    start()
    const clock = new ManualClock()
    const limiter = adaptiveConcurrency({
      name: 'downstream',
      initial: 10,
      probeSamples: 1,
      clock,
    })
    const engine = new BulkheadEngine({
      options: { name: 'adaptive', max: limiter, clock },
      request,
      response,
    })
    expect(await points('sluice.rate_limiting.limit')).toEqual([])

    // The probe ends with its one sample and the limit goes from 3 to `initial`.
    const outcome = await engine.admit(from('10.0.0.1'), undefined)
    await clock.advanceAsync(10)
    outcome.workDone(false)
    outcome.done(false)

    expect(limiter.limit).toBe(10)
    expect(await points('sluice.rate_limiting.limit')).toEqual([
      [{ 'sluice.rate_limiting.limiter': 'downstream' }, 10],
    ])
    expect(await points('sluice.rate_limiting.requests')).toEqual([
      [decided('adaptive', 'acquired'), 1],
    ])
  })
})

describe('instrument(): stores', () => {
  it('counts failures and recoveries by store, leaving the error out', async () => {
    start()
    const error = new Error('connect ECONNREFUSED 127.0.0.1:6379')
    storeChannel.publish({ event: 'failure', store: 'redisStore', error })
    storeChannel.publish({ event: 'recovery', store: 'redisStore' })
    storeChannel.publish({ event: 'failure', store: 'redisStore', error })

    const store = (event: string) => ({
      'sluice.rate_limiting.store.name': 'redisStore',
      'sluice.rate_limiting.store.event': event,
    })
    expect(await points('sluice.rate_limiting.store.events')).toEqual([
      [store('failure'), 2],
      [store('recovery'), 1],
    ])
  })
})

describe('instrument(): subscription', () => {
  const channels = ['sluice:rate-limit', 'sluice:bulkhead', 'sluice:store', 'sluice:adaptive']
  const listened = () => channels.filter((name) => diagnostics.hasSubscribers(name))

  it('subscribes only when called, and stop() unsubscribes from every channel', async () => {
    expect(listened()).toEqual([])
    const metricsHandle = start()
    expect(listened()).toEqual(channels)
    metricsHandle.stop()
    metricsHandle.stop()
    expect(listened()).toEqual([])

    const engine = new RateLimitEngine({ options: { limit: 1 }, request, response })
    await engine.admit(from('10.0.0.1'), undefined)
    expect(await points('sluice.rate_limiting.requests')).toEqual([])
  })

  it('stops at the end of a using block', () => {
    {
      using _ = instrument({ meterProvider: provider })
      expect(listened()).toEqual(channels)
    }
    expect(listened()).toEqual([])
  })

  it('records into the global meter provider by default', async () => {
    metrics.setGlobalMeterProvider(provider)
    try {
      start()
      const engine = new RateLimitEngine({
        options: { name: 'global', limit: 1 },
        request,
        response,
      })
      await engine.admit(from('10.0.0.1'), undefined)
      expect(await points('sluice.rate_limiting.requests')).toEqual([
        [decided('global', 'acquired'), 1],
      ])
    } finally {
      metrics.disable()
    }
  })

  it('names its meter @sluice/otel, at the version of its package.json', async () => {
    start()
    await new RateLimitEngine({ options: { limit: 1 }, request, response }).admit(
      from('10.0.0.1'),
      undefined,
    )
    const { resourceMetrics } = await reader.collect()
    const scope = resourceMetrics.scopeMetrics.map((s) => s.scope)
    const { version } = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string }
    expect(VERSION).toBe(version)
    expect(scope).toEqual([{ name: '@sluice/otel', version, schemaUrl: undefined }])
  })
})

describe('instrument(): options', () => {
  it('refuses unknown names, with a suggestion', () => {
    expect(() => instrument({ meterprovider: provider } as never)).toThrow(
      new TypeError('instrument: unknown option "meterprovider" (did you mean "meterProvider"?)'),
    )
  })

  it('refuses options that are not an object', () => {
    expect(() => instrument(null as never)).toThrow(
      new TypeError('instrument: options must be an object, got null'),
    )
  })

  it('refuses a meterProvider without getMeter', () => {
    expect(() => instrument({ meterProvider: {} } as never)).toThrow(
      new TypeError('instrument: "meterProvider" must be a MeterProvider, got an object'),
    )
    expect(diagnostics.hasSubscribers('sluice:rate-limit')).toBe(false)
  })
})
