import { ManualClock } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { DECISION_SCENARIOS, HOT_RATE, KEYED_RATE, PACED_RATE } from '../src/config'
import { benchRate, CONTENDERS, contender, decide, type Shape } from '../src/contenders'
import { inlineGcra, inlineGcraScalar } from '../src/floor'
import { makeKeys } from '../src/keys'

// One hour per window: nothing refills while a test runs, whatever the machine's speed,
// so these checks read no clock of their own and assert no duration.
const FIVE_PER_HOUR = { limit: 5, windowMs: 3_600_000 }

describe('inline GCRA floor', () => {
  it('admits the limit per key, then refuses', () => {
    const decide = inlineGcra(FIVE_PER_HOUR.limit, FIVE_PER_HOUR.windowMs)
    expect(Array.from({ length: 7 }, () => decide('a'))).toEqual([
      true,
      true,
      true,
      true,
      true,
      false,
      false,
    ])
    expect(decide('b')).toBe(true)
  })

  it('on one object field, admits the limit, then refuses', () => {
    const decide = inlineGcraScalar(FIVE_PER_HOUR.limit, FIVE_PER_HOUR.windowMs)
    expect(Array.from({ length: 6 }, () => decide())).toEqual([true, true, true, true, true, false])
  })
})

/** Every contender in every shape it is measured in: the harness must hold real limiters. */
const cases = CONTENDERS.flatMap((c) => c.shapes.map((shape): [string, Shape] => [c.id, shape]))

describe('every contender really limits', () => {
  it.each(
    cases.filter(
      ([id]) => contender(id).algorithm !== 'concurrency' && id !== 'sluice/events@unsubscribed',
    ),
  )('%s (%s)', async (id, shape) => {
    const subject = contender(id)
    // sluice limiters take a clock: a stopped one makes the warm-up's ramp exact too.
    const instance = subject.create(FIVE_PER_HOUR, {
      keys: shape === 'hot' ? 1 : 2,
      clock: new ManualClock(),
    })
    // A leaky bucket has a burst of one; a cold warm-up bucket a third of its capacity.
    const burst =
      subject.algorithm === 'leaky-bucket'
        ? 1
        : subject.algorithm === 'warm-up'
          ? Math.floor(FIVE_PER_HOUR.limit / 3)
          : FIVE_PER_HOUR.limit
    const answers: boolean[] = []
    for (let i = 0; i < burst + 2; i++) answers.push(await decide(instance, 'a'))
    expect(answers).toEqual([...Array<boolean>(burst).fill(true), false, false])
    if (shape === 'keyed') expect(await decide(instance, 'b')).toBe(true)
  })

  it('the event check answers without limiting, as the engine reads it per decision', async () => {
    const instance = contender('sluice/events@unsubscribed').create(FIVE_PER_HOUR, { keys: 1 })
    for (let i = 0; i < 10; i++) expect(await decide(instance, 'a')).toBe(true)
  })

  it.each(CONTENDERS.filter((c) => c.algorithm === 'concurrency').map((c) => c.id))(
    'the bulkhead contender %s takes and gives back a slot each call, so never fills',
    async (id) => {
      const instance = contender(id).create({ limit: 1, windowMs: 1 }, { keys: 1 })
      for (let i = 0; i < 30; i++) expect(await decide(instance, 'a')).toBe(true)
    },
  )
})

describe('benchmark rates', () => {
  it('are never reached by a run: a leaky bucket is paced above any call rate', () => {
    expect(benchRate(contender('sluice/leaky-bucket'), 1)).toBe(PACED_RATE)
    expect(benchRate(contender('sluice/token-bucket'), 1)).toBe(HOT_RATE)
    expect(benchRate(contender('peer/express-rate-limit'), 10_000)).toBe(KEYED_RATE)
    // A contender runs for its rounds of samples plus a warm-up round and a 50 ms settle:
    // even at 100 million decisions a second that stays below the hot limit.
    const hot = DECISION_SCENARIOS.find((s) => s.keys === 1)!
    const seconds = ((hot.rounds + 1) * hot.sampleMs + 50) / 1000
    expect(HOT_RATE.limit).toBeGreaterThan(100e6 * seconds)
  })

  it('keep a key state between visits: 8.6 s of debt per decision at the many-keys rate', () => {
    expect(KEYED_RATE.windowMs / KEYED_RATE.limit).toBe(8640)
  })
})

describe('makeKeys', () => {
  it('gives distinct keys in the same scattered order every time', () => {
    const keys = makeKeys(70_000)
    expect(new Set(keys).size).toBe(70_000)
    expect(makeKeys(70_000)).toEqual(keys)
    expect(keys.slice(0, 3)).not.toEqual(['10.0.0.0', '10.0.0.1', '10.0.0.2'])
  })
})
