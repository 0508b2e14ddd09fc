import { describe, expect, it } from 'vitest'
import { compilePolicy, concurrencyPolicy } from './policy'
import { fromWire, toWire, withPolicies } from './stored-results'

const window = compilePolicy({ algorithm: 'fixed-window', limit: 2, window: '1m' }, 'test')
const slots = concurrencyPolicy('slots', 1)

describe('the results of StoredState over a wire', () => {
  it('carries a wait of never through JSON, and every field with it', () => {
    const taken = {
      allowed: false,
      results: [
        {
          allowed: false,
          remaining: 0,
          resetMs: 30_000,
          retryAfterMs: Number.POSITIVE_INFINITY,
          blocked: true as const,
        },
        {
          allowed: true,
          remaining: 0,
          resetMs: 0,
          retryAfterMs: 0,
          lease: { id: 'l', permits: 1 },
        },
      ],
    }
    const json = JSON.stringify(toWire(taken))
    expect(JSON.parse(json).results[0].retryAfterMs).toBeNull()
    expect(fromWire(JSON.parse(json), [window, slots])).toEqual({
      allowed: false,
      results: withPolicies(taken.results, [window, slots]),
    })
  })

  it('gives each result its policy and limit, and only the fields it has', () => {
    expect(
      withPolicies(
        [{ allowed: true, remaining: 1, resetMs: 60_000, retryAfterMs: 0, receipt: 7 }],
        [window],
      ),
    ).toEqual([
      {
        policy: window,
        allowed: true,
        limit: 2,
        remaining: 1,
        resetMs: 60_000,
        retryAfterMs: 0,
        receipt: 7,
      },
    ])
  })

  it.each([null, 'ok', {}, { allowed: true, results: [] }])(
    'refuses %j as an answer for one policy',
    (reply) => {
      expect(fromWire(reply, [window])).toBeUndefined()
    },
  )
})
