import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { adaptiveConcurrency } from './adaptive/adaptive-concurrency'
import { normalizeSpec } from './algorithms'
import { ManualClock } from './clock'
import { concurrency } from './concurrency/concurrency'
import { createLimiter } from './create-limiter'
import { bulkheaded } from './decorators/bulkheaded'
import { rateLimited } from './decorators/rate-limited'
import { fixedWindow } from './fixed-window/fixed-window'
import { leakyBucket } from './leaky-bucket/leaky-bucket'
import { slidingWindow } from './sliding-window/sliding-window'
import { tokenBucket } from './token-bucket/token-bucket'
import { warmUpTokenBucket } from './warm-up/warm-up-token-bucket'
import { emitWarning, forgetWarnings } from './warnings'

const help = (code: string) =>
  `(see https://github.com/sluice-js/sluice/blob/main/docs/warnings/${code}.md)`

/** The SluiceWarnings `process.emitWarning` was given, as `[code, message]`. */
let given: () => [string, string][]

beforeEach(() => {
  forgetWarnings()
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
  given = () =>
    spy.mock.calls.map(([message, options]) => {
      expect(options).toMatchObject({ type: 'SluiceWarning' })
      return [(options as { code: string }).code, String(message)]
    })
})

afterEach(() => {
  vi.restoreAllMocks()
  vi.unstubAllGlobals()
})

const windowInMs = (factory: string, option: string, value: number) => [
  'ERR_SLUICE_WINDOW_IN_MS',
  `${factory}: "${option}" is ${value}, which is ${value} milliseconds, not seconds. Write '${value}s' if you meant seconds, or '${value}ms' to silence this. ${help('ERR_SLUICE_WINDOW_IN_MS')}`,
]
const durationInMs = (factory: string, option: string, value: number) => [
  'ERR_SLUICE_DURATION_IN_MS',
  `${factory}: "${option}" is ${value}, which is ${value} milliseconds, not seconds. Write '${value}s' if you meant seconds, or '${value}ms' to silence this. ${help('ERR_SLUICE_DURATION_IN_MS')}`,
]

describe('core factories warn about a bare window under 1000', () => {
  it.each([
    ['tokenBucket', () => tokenBucket({ limit: 10, window: 60 })],
    ['leakyBucket', () => leakyBucket({ limit: 10, window: 60 })],
    ['slidingWindow', () => slidingWindow({ limit: 10, window: 60 })],
    ['fixedWindow', () => fixedWindow({ limit: 10, window: 60 })],
    ['warmUpTokenBucket', () => warmUpTokenBucket({ limit: 10, window: 60, warmUp: '1m' })],
  ])('%s({ window: 60 }) warns once, with the window code and its help page', (factory, build) => {
    build()
    build()
    expect(given()).toEqual([windowInMs(factory, 'window', 60)])
  })

  it('warns about warmUp with the duration code', () => {
    warmUpTokenBucket({ limit: 10, window: '1m', warmUp: 30 })
    expect(given()).toEqual([durationInMs('warmUpTokenBucket', 'warmUp', 30)])
  })

  it('warns through createLimiter, normalizeSpec and reconfigure', () => {
    createLimiter({ algorithm: 'fixed-window', limit: 5, window: 10 })
    normalizeSpec(
      { algorithm: 'sliding-window', limit: 5, window: 20 },
      'rateLimit',
      'policies[0].',
    )
    tokenBucket({ limit: 5, window: '1m' }).reconfigure({ limit: 5, window: 30 })
    expect(given()).toEqual([
      windowInMs('fixedWindow', 'window', 10),
      windowInMs('rateLimit', 'policies[0].window', 20),
      windowInMs('tokenBucket.reconfigure', 'window', 30),
    ])
  })

  it('is quiet with units, with 1000 and more, and with the default', () => {
    tokenBucket({ limit: 10, window: '60s' })
    leakyBucket({ limit: 10, window: 1000 })
    slidingWindow({ limit: 10, window: '60ms' })
    fixedWindow({ limit: 10 })
    warmUpTokenBucket({ limit: 10, window: 60_000, warmUp: 0 })
    warmUpTokenBucket({ limit: 10, warmUp: '30s' })
    expect(given()).toEqual([])
  })

  it('falls back to console.warn outside Node (no process), so core runs anywhere', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    vi.stubGlobal('process', undefined)
    tokenBucket({ limit: 10, window: 60 })
    vi.unstubAllGlobals()
    expect(warn.mock.calls).toEqual([
      [`SluiceWarning [ERR_SLUICE_WINDOW_IN_MS]: ${windowInMs('tokenBucket', 'window', 60)[1]}`],
    ])
  })
})

describe('core waiting calls warn about a bare timeout under 1000', () => {
  it('acquire and enter', async () => {
    const clock = new ManualClock()
    await tokenBucket({ limit: 10, window: '1s', clock }).acquire(1, { timeout: 2 })
    await fixedWindow({ limit: 10, window: '1s', clock }).acquire(1, { timeout: 3 })
    ;(await concurrency({ max: 1, clock }).enter({ timeout: 5 })).release()
    ;(await adaptiveConcurrency({ clock }).enter({ timeout: 7 })).release()
    expect(given()).toEqual([
      durationInMs('tokenBucket.acquire', 'timeout', 2),
      durationInMs('fixedWindow.acquire', 'timeout', 3),
      durationInMs('concurrency.enter', 'timeout', 5),
      durationInMs('adaptiveConcurrency.enter', 'timeout', 7),
    ])
  })

  it('is quiet with units, 0, 1000 and more, or no timeout', async () => {
    const bucket = tokenBucket({ limit: 10, window: '1s', clock: new ManualClock() })
    for (const timeout of ['2s', '250ms', 0, 1000, Number.POSITIVE_INFINITY] as const) {
      await bucket.acquire(1, { timeout })
    }
    await bucket.acquire(1, {})
    await bucket.acquire()
    expect(given()).toEqual([])
  })
})

describe('decorators warn about a bare wait under 1000, once', () => {
  it('rateLimited and bulkheaded name "wait", and their acquire or enter adds no "timeout"', async () => {
    const clock = new ManualClock()
    const paced = rateLimited(tokenBucket({ limit: 10, window: '1s', clock }), { wait: 5 })(
      async () => 'ok',
    )
    const guarded = bulkheaded(concurrency({ max: 1, clock }), { wait: 10 })(async () => 'ok')
    expect([await paced(), await guarded()]).toEqual(['ok', 'ok'])
    expect(given()).toEqual([
      durationInMs('rateLimited', 'wait', 5),
      durationInMs('bulkheaded', 'wait', 10),
    ])
  })

  it('a wait in milliseconds written as a string warns nowhere, priority or not', async () => {
    const clock = new ManualClock()
    const paced = rateLimited(tokenBucket({ limit: 10, window: '1s', clock }), { wait: '500ms' })(
      async () => 'ok',
    )
    const guarded = bulkheaded(concurrency({ max: 1, clock }), {
      wait: '250ms',
      priority: () => 'critical',
    })(async () => 'ok')
    expect([await paced(), await guarded()]).toEqual(['ok', 'ok'])
    expect(given()).toEqual([])
  })
})

describe('durations that are milliseconds by nature stay unwarned', () => {
  it("CoDel's queueTarget and queueInterval, adaptive concurrency's updateInterval", () => {
    concurrency({ max: 2, queuePolicy: 'codel', queueTarget: 5, queueInterval: 100 })
    adaptiveConcurrency({ queuePolicy: 'adaptive-lifo', queueTarget: 5, updateInterval: 50 })
    expect(given()).toEqual([])
  })

  it("adaptive concurrency's probeInterval (default 30 s) is warned about", () => {
    adaptiveConcurrency({ probeInterval: 30 })
    expect(given()).toEqual([durationInMs('adaptiveConcurrency', 'probeInterval', 30)])
  })
})

describe('emitWarning', () => {
  it('gives each code and message once per process, whichever factory meets it', () => {
    emitWarning('tokenBucket', 'ERR_SLUICE_TEST', 'once')
    emitWarning('rateLimit', 'ERR_SLUICE_TEST', 'once')
    emitWarning('rateLimit', 'ERR_SLUICE_TEST', 'every time', true)
    emitWarning('rateLimit', 'ERR_SLUICE_TEST', 'every time', true)
    expect(given().map(([, message]) => message)).toEqual([
      `tokenBucket: once ${help('ERR_SLUICE_TEST')}`,
      `rateLimit: every time ${help('ERR_SLUICE_TEST')}`,
      `rateLimit: every time ${help('ERR_SLUICE_TEST')}`,
    ])
  })
})
