import { describe, expect, it } from 'vitest'
import { CONTENDERS } from '../src/contenders'
import type { ContenderResult, ScenarioResult } from '../src/decision'
import { heapBreakdown } from '../src/heap'
import type { AppResult } from '../src/http'
import { compareProfiles, summarizeProfile } from '../src/profile'
import { pairedRatio, percentile, summarize } from '../src/stats'
import { evaluateTargets } from '../src/targets'

describe('stats', () => {
  it('summarises by median and range', () => {
    expect(summarize([3, 1, 2])).toEqual({ median: 2, min: 1, max: 3, n: 3 })
    expect(summarize([4, 1, 2, 3]).median).toBe(2.5)
    expect(summarize([]).n).toBe(0)
  })

  it('takes nearest-rank percentiles', () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i)
    expect(percentile(values, 99)).toBe(99)
    expect(percentile(values, 100)).toBe(100)
    expect(percentile([7], 99)).toBe(7)
  })

  it('pairs ratios round by round', () => {
    expect(pairedRatio([2, 9, 4], [1, 3, 4])).toEqual({ median: 2, min: 1, max: 3, n: 3 })
  })
})

const frame = (
  id: number,
  functionName: string,
  url: string,
  hitCount: number,
  children: number[] = [],
) => ({
  id,
  callFrame: { functionName, url, lineNumber: 0 },
  hitCount,
  children,
})

describe('CPU profile summary', () => {
  // (root) → express handle → sluice rateLimit → ipaddr.js parse, setHeader (node) ; handle → router next → handler
  const profile = {
    startTime: 0,
    endTime: 1000,
    samples: Array.from({ length: 10 }, () => 1),
    nodes: [
      frame(1, '(root)', '', 0, [2, 7]),
      frame(2, 'handle', 'file:///x/node_modules/express/lib/application.js', 1, [3, 6]),
      frame(3, 'rateLimit', 'file:///work/main/packages/express/src/rate-limit.ts', 2, [4, 5]),
      frame(4, 'get', 'file:///x/node_modules/ipaddr.js/lib/ipaddr.js', 3),
      frame(5, 'setHeader', 'node:_http_outgoing', 1, [8]),
      frame(6, 'next', 'file:///x/node_modules/router/index.js', 2),
      frame(7, '(idle)', '', 5),
      frame(8, 'handler', 'file:///work/main/bench/src/http-apps.ts', 1),
    ],
  }

  it('charges Node internals and sluice dependencies to sluice, but not code it calls through', () => {
    const summary = summarizeProfile(profile)
    expect(summary.samples).toBe(10)
    // rateLimit 2 + ipaddr.js 3 + setHeader 1; the handler below setHeader is app code.
    expect(summary.sluiceAttributedPct).toBe(60)
    expect(summary.sluiceSelfPct).toBe(20)
    expect(summary.top[0]).toEqual({
      frame: 'get ipaddr.js/lib/ipaddr.js',
      selfPct: 30,
      sluice: false,
    })
    expect(summary.usPerSample).toBe(100)
  })

  it('compares two profiles per request', () => {
    const base = summarizeProfile(profile)
    const test = {
      ...base,
      frames: { ...base.frames, 'get ipaddr.js/lib/ipaddr.js': 8 },
      samples: 15,
    }
    // ipaddr.js's share went from 3 in 10 samples at 10 µs/request to 8 in 15 at 15 µs.
    const comparison = compareProfiles(base, 10, test, 15)
    expect(comparison.baseUs).toBe(10)
    expect(comparison.testUs).toBe(15)
    expect(comparison.added[0]).toEqual({ frame: 'get ipaddr.js/lib/ipaddr.js', us: 5 })
  })
})

describe('heap breakdown', () => {
  it('gives what was added per key, largest first, leaving out the negligible', () => {
    const before = new Map([
      ['Map', { bytes: 1000, count: 10 }],
      ['(string)', { bytes: 500, count: 5 }],
    ])
    const after = new Map([
      ['Map', { bytes: 81_000, count: 1010 }],
      ['(string)', { bytes: 520, count: 6 }],
      ['TimedEntry', { bytes: 32_000, count: 1000 }],
    ])
    expect(heapBreakdown(before, after, 1000)).toEqual([
      { kind: 'Map', bytesPerKey: 80, objectsPerKey: 1 },
      { kind: 'TimedEntry', bytesPerKey: 32, objectsPerKey: 1 },
    ])
  })
})

describe('targets', () => {
  const scenario = (keys: number, results: [string, number[], number?][]): ScenarioResult => ({
    scenario: {
      name: keys === 1 ? 'hot' : String(keys),
      title: String(keys),
      shape: keys === 1 ? 'hot' : 'keyed',
      keys,
      rounds: 3,
      sampleMs: 1,
    },
    results: results.map(([id, samples, bytesPerKey]): ContenderResult => {
      const c = CONTENDERS.find((x) => x.id === id)!
      const floor = results.find(([x]) => x === 'floor/gcra-map')![1]
      return {
        contender: c,
        samples,
        ns: summarize(samples),
        vsFloor: pairedRatio(samples, floor),
        bytesPerKey,
        allocated: undefined,
        alwaysAdmitted: true,
      }
    }),
  })
  const hot = scenario(1, [
    ['floor/gcra-map', [100, 100, 100]],
    ['sluice/token-bucket', [110, 114, 112]],
    ['sluice/sliding-window', [130, 120, 125]],
    ['sluice/fixed-window', [90, 90, 90]],
    ['peer/hono-rate-limiter', [80, 80, 80]],
    ['peer/limiter-token-bucket', [120, 121, 122]],
    ['peer/limiter-rate-limiter', [200, 200, 200]],
  ])
  const large = scenario(1_000_000, [
    ['floor/gcra-map', [1, 1, 1], 40],
    ['sluice/token-bucket@store', [1, 1, 1], 96],
    ['sluice/fixed-window@store', [1, 1, 1], 140],
  ])
  const app = (variant: 'bare' | 'sluice', rps: number[]): AppResult => ({
    framework: 'express',
    variant,
    runs: [],
    rps: summarize(rps),
    p99Ms: summarize([1]),
    cpuUs: summarize([20]),
    vsBare: variant === 'bare' ? undefined : pairedRatio(rps, [1000, 1000, 1000]),
    addedCpuUs: undefined,
    probe: undefined,
    failures: 0,
  })
  const rows = evaluateTargets({
    decision: [hot, large],
    http: [app('bare', [1000, 1000, 1000]), app('sluice', [980, 960, 975])],
  })
  const row = (text: string) => rows.find((r) => r.target.includes(text))!

  it('judges the floor ratio per algorithm and asks for a CPU profile of a miss', () => {
    expect(row('token-bucket: ≤ 1.15×').met).toBe(true)
    const sliding = row('sliding-window: ≤ 1.15×')
    expect(sliding.met).toBe(false)
    expect(sliding.miss).toBe('9% over the bound')
    expect(sliding.evidence).toEqual({
      kind: 'cpu',
      contender: 'sluice/sliding-window',
      scenario: 'hot',
    })
    expect(row('leaky-bucket: ≤ 1.15×').met).toBeUndefined()
  })

  it('compares with the faster of limiter’s two paths', () => {
    const limiter = row('faster than limiter')
    expect(limiter.met).toBe(false)
    expect(limiter.measured).toContain('sliding-window')
    expect(limiter.measured).toContain('TokenBucket')
  })

  it('judges the fixed window against hono-rate-limiter, memory at 1M keys and HTTP', () => {
    expect(row('Hot-key fixed window').measured).toContain('1.13×')
    expect(row('Hot-key fixed window').met).toBe(false)
    expect(row('Memory store, token-bucket').met).toBe(true)
    expect(row('Memory store, fixed-window').evidence).toEqual({
      kind: 'heap',
      contender: 'sluice/fixed-window@store',
    })
    expect(row('express: sluice middleware').met).toBe(true)
    expect(row('koa: sluice middleware').met).toBeUndefined()
  })
})
