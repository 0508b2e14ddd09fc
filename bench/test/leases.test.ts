import { describe, expect, it } from 'vitest'
import { ISSUE_27, issue27Rows, takeTargets, targetLine } from '../src/issue27'
import { worstOf } from '../src/leases/measure'

describe('leases bench: the worst window', () => {
  const policy = { limit: 100, windowMs: 1000, slots: 10 }
  const at = (pairs: [number, number][], length = 3000) => {
    const counts = new Float64Array(length)
    for (const [ms, n] of pairs) counts[ms] = n
    return counts
  }

  it('fixed window: the aligned window that admitted most', () => {
    const counts = at([
      [999, 60],
      [1000, 70],
      [1999, 40],
    ])
    expect(worstOf('fixed-window', counts, policy)).toEqual({ worst: 110, over: 10, text: '110' })
  })

  it("sliding window: any 11 consecutive slots of 100 ms, those at the run's edges too", () => {
    // 50 in slot 0, 60 in slot 10: one 11-slot span holds both.
    expect(
      worstOf(
        'sliding-window',
        at([
          [5, 50],
          [1005, 60],
        ]),
        policy,
      ).worst,
    ).toBe(110)
    // Slot 11 is 11 slots after slot 0: no span holds both.
    expect(
      worstOf(
        'sliding-window',
        at([
          [5, 50],
          [1105, 60],
        ]),
        policy,
      ).worst,
    ).toBe(60)
  })

  it('token bucket: the interval of whole 50 ms units beyond capacity + rate × length', () => {
    // Full at the start: 100 at once is the capacity; 10 more within the first 50 ms
    // exceed it by 5 (rate 0.1 per ms: 5 per unit).
    const result = worstOf(
      'token-bucket',
      at([
        [0, 100],
        [10, 10],
      ]),
      policy,
    )
    expect(result.over).toBe(5)
    expect(result.text).toBe('110 in 50 ms (allowance 105)')
    expect(
      worstOf(
        'token-bucket',
        at([
          [0, 100],
          [60, 10],
        ]),
        policy,
      ).over,
    ).toBe(0)
  })
})

describe('issue 27 targets from sub-benches', () => {
  it('takes TARGET lines out of the output and fills in what was not reported', () => {
    const output = ['## table', targetLine('clusterBudget', 'admitted 10,000', true), '| a |'].join(
      '\n',
    )
    const { rows, rest } = takeTargets(output)
    expect(rest).toBe('## table\n| a |')
    const all = issue27Rows(rows)
    expect(all).toHaveLength(Object.keys(ISSUE_27).length)
    expect(all.find((row) => row.target === ISSUE_27.clusterBudget)).toEqual({
      issue: 27,
      target: ISSUE_27.clusterBudget,
      measured: 'admitted 10,000',
      met: true,
    })
    expect(all.find((row) => row.target === ISSUE_27.clusterP99)?.measured).toBe(
      'not measured in this run',
    )
  })
})
