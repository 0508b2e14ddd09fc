import { createServer, get } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createdInsideRequest, emitWarning } from '@sluice/keyed/store'
import { warningsOf } from '@sluice/keyed/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { BulkheadEngine, type BulkheadOptions } from './bulkhead-engine'
import { RateLimitEngine, type RateLimitOptions } from './rate-limit-engine'
import { enabledChecks } from './validate'

const atModuleLevel = createdInsideRequest()

const help = (code: string) =>
  `(see https://github.com/sluice-js/sluice/blob/main/docs/warnings/${code}.md)`

afterEach(() => {
  vi.restoreAllMocks()
  vi.unstubAllGlobals()
})

describe('enabledChecks', () => {
  const checks = ['xForwardedFor', 'trustProxy'] as const

  it('runs every check by default or with true, none with false', () => {
    expect([...enabledChecks('rateLimit', undefined, checks)]).toEqual([
      'xForwardedFor',
      'trustProxy',
    ])
    expect([...enabledChecks('rateLimit', true, checks)]).toEqual(['xForwardedFor', 'trustProxy'])
    expect([...enabledChecks('rateLimit', false, checks)]).toEqual([])
  })

  it('turns single checks off', () => {
    expect([...enabledChecks('rateLimit', { trustProxy: false }, checks)]).toEqual([
      'xForwardedFor',
    ])
    expect([...enabledChecks('rateLimit', { trustProxy: true }, checks)]).toEqual([
      'xForwardedFor',
      'trustProxy',
    ])
  })

  it('refuses anything else, naming the factory and the value', () => {
    expect(() => enabledChecks('rateLimit', 'yes', checks)).toThrow(
      new TypeError('rateLimit: "validate" must be a boolean or an object, got "yes"'),
    )
    expect(() => enabledChecks('bulkhead', [], checks)).toThrow(
      new TypeError('bulkhead: "validate" must be a boolean or an object, got an array'),
    )
    expect(() => enabledChecks('rateLimit', { xff: false }, checks)).toThrow(
      new TypeError('rateLimit: unknown check "validate.xff" (known: xForwardedFor, trustProxy)'),
    )
    expect(() => enabledChecks('rateLimit', { trustProxy: 0 }, checks)).toThrow(
      new TypeError('rateLimit: "validate.trustProxy" must be a boolean, got 0'),
    )
  })
})

describe('emitWarning', () => {
  it('goes through process.emitWarning with type SluiceWarning, the code and its help page', () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    emitWarning('rateLimit', 'ERR_SLUICE_TEST', 'something looks off')
    expect(spy.mock.calls).toEqual([
      [
        `rateLimit: something looks off ${help('ERR_SLUICE_TEST')}`,
        { type: 'SluiceWarning', code: 'ERR_SLUICE_TEST' },
      ],
    ])
  })

  it('falls back to console.warn where there is no process (a Worker)', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    vi.stubGlobal('process', undefined)
    emitWarning('bulkhead', 'ERR_SLUICE_TEST', 'no process here')
    vi.unstubAllGlobals()
    expect(warn.mock.calls).toEqual([
      [`SluiceWarning [ERR_SLUICE_TEST]: bulkhead: no process here ${help('ERR_SLUICE_TEST')}`],
    ])
  })

  it('gives each code and message once per process, whichever middleware meets it', () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    emitWarning('rateLimit', 'ERR_SLUICE_DEDUPE', 'first message')
    emitWarning('rateLimit', 'ERR_SLUICE_DEDUPE', 'first message')
    emitWarning('bulkhead', 'ERR_SLUICE_DEDUPE', 'first message')
    emitWarning('rateLimit', 'ERR_SLUICE_DEDUPE', 'second message')
    emitWarning('rateLimit', 'ERR_SLUICE_DEDUPE_TOO', 'first message')
    emitWarning('bulkhead', 'ERR_SLUICE_DEDUPE', 'second message')
    expect(spy.mock.calls.map(([text]) => text)).toEqual([
      `rateLimit: first message ${help('ERR_SLUICE_DEDUPE')}`,
      `rateLimit: second message ${help('ERR_SLUICE_DEDUPE')}`,
      `rateLimit: first message ${help('ERR_SLUICE_DEDUPE_TOO')}`,
    ])
  })
})

describe('createdInsideRequest', () => {
  it('is false at module level and in a test', () => {
    expect(atModuleLevel).toBe(false)
    expect(createdInsideRequest()).toBe(false)
  })

  it('is true inside a real node:http request handler', async () => {
    const seen: boolean[] = []
    const server = createServer((_req, res) => {
      seen.push(createdInsideRequest())
      res.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      await new Promise<void>((resolve, reject) => {
        get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
          res.resume()
          res.on('end', resolve)
        }).on('error', reject)
      })
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
    expect(seen).toEqual([true])
  })

  it('leaves Error.stackTraceLimit as it was', () => {
    const limit = Error.stackTraceLimit
    createdInsideRequest()
    expect(Error.stackTraceLimit).toBe(limit)
  })
})

describe('durations in bare milliseconds', () => {
  const rateLimit = (options: RateLimitOptions) =>
    warningsOf(() => new RateLimitEngine({ options, request: {} as never, response: {} as never }))
  const bulkhead = (options: BulkheadOptions) =>
    warningsOf(() => new BulkheadEngine({ options, request: {} as never, response: {} as never }))
  const about = (code: string, text: string) => [[code, expect.stringContaining(text)]]

  it('rateLimit: "wait.timeout"', () => {
    expect(rateLimit({ wait: { timeout: 2 } })).toEqual(
      about('ERR_SLUICE_DURATION_IN_MS', `rateLimit: "wait.timeout" is 2, which is 2 milliseconds`),
    )
    expect(rateLimit({ wait: { timeout: '2s' } })).toEqual([])
    expect(rateLimit({ wait: { timeout: 0 } })).toEqual([])
  })

  it('rateLimit: "window", "block.for" and each entry of "policies"', () => {
    expect(rateLimit({ window: 60 })).toEqual(
      about('ERR_SLUICE_WINDOW_IN_MS', `rateLimit: "window" is 60`),
    )
    expect(rateLimit({ block: { for: 60 } })).toEqual(
      about('ERR_SLUICE_DURATION_IN_MS', `rateLimit: "block.for" is 60`),
    )
    expect(
      rateLimit({
        policies: [
          { name: 'a', window: '1m' },
          { name: 'b', window: 5 },
        ],
      }),
    ).toEqual(about('ERR_SLUICE_WINDOW_IN_MS', `rateLimit: "policies[1].window" is 5`))
    // Core's normalizeSpec reads the warm-up policy too: still one warning, naming rateLimit.
    expect(rateLimit({ algorithm: 'warm-up', window: 30, warmUp: 20 })).toEqual([
      ['ERR_SLUICE_WINDOW_IN_MS', expect.stringMatching(/^rateLimit: "window" is 30, /)],
      ['ERR_SLUICE_DURATION_IN_MS', expect.stringMatching(/^rateLimit: "warmUp" is 20, /)],
    ])
    expect(rateLimit({ limit: () => 10, block: { for: 15 } })).toEqual(
      about('ERR_SLUICE_DURATION_IN_MS', `rateLimit: "block.for" is 15`),
    )
  })

  it('bulkhead: "queueTimeout", "retryAfter" and "holdTimeout"', () => {
    expect(bulkhead({ maxQueue: 10, queueTimeout: 5 })).toEqual(
      about('ERR_SLUICE_DURATION_IN_MS', `bulkhead: "queueTimeout" is 5, which is 5 milliseconds`),
    )
    expect(bulkhead({ retryAfter: 30 })).toEqual(
      about('ERR_SLUICE_DURATION_IN_MS', `bulkhead: "retryAfter" is 30, which is 30 milliseconds`),
    )
    expect(bulkhead({ holdTimeout: 60 })).toEqual(
      about('ERR_SLUICE_DURATION_IN_MS', `bulkhead: "holdTimeout" is 60, which is 60 milliseconds`),
    )
    expect(
      bulkhead({ maxQueue: 10, queueTimeout: '5s', retryAfter: 30_000, holdTimeout: false }),
    ).toEqual([])
  })
})
