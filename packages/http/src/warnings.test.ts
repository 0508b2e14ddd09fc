import { afterEach, describe, expect, it, vi } from 'vitest'
import { emitWarning, enabledChecks } from './warnings'

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
  it('goes through process.emitWarning with type SluiceWarning and the code', () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    emitWarning('rateLimit', 'ERR_SLUICE_TEST', 'something looks off')
    expect(spy.mock.calls).toEqual([
      ['rateLimit: something looks off', { type: 'SluiceWarning', code: 'ERR_SLUICE_TEST' }],
    ])
  })

  it('falls back to console.warn where there is no process (a Worker)', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    vi.stubGlobal('process', undefined)
    emitWarning('bulkhead', 'ERR_SLUICE_TEST', 'no process here')
    vi.unstubAllGlobals()
    expect(warn.mock.calls).toEqual([
      ['SluiceWarning [ERR_SLUICE_TEST]: bulkhead: no process here'],
    ])
  })
})
