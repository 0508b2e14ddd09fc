import { describe, expect, it } from 'vitest'
import { ManualClock } from './clock'
import { concurrency } from './concurrency/concurrency'
import { fixedWindow } from './fixed-window/fixed-window'
import { leakyBucket } from './leaky-bucket/leaky-bucket'
import { slidingWindow } from './sliding-window/sliding-window'
import { tokenBucket } from './token-bucket/token-bucket'
import type { ConcurrencyLimiter, Limiter, RateLimiter } from './types'
import { warmUpTokenBucket } from './warm-up/warm-up-token-bucket'

const DURATION_RULE =
  "must be a duration (milliseconds as a non-negative number, or a string such as '250ms', '1.5s', '5m', '2h', '1d')"

// (call, error class, exact message): every option is checked at construction.
const WINDOW_CAP = 'must be at most 2^53 microseconds (9,007,199,254,740.991 ms, about 285 years)'

const badOptions: [string, () => unknown, ErrorConstructor, string][] = [
  [
    'no options',
    () => tokenBucket(undefined as never),
    TypeError,
    'tokenBucket: options must be an object, got undefined',
  ],
  [
    'array options',
    () => fixedWindow([] as never),
    TypeError,
    'fixedWindow: options must be an object, got an array',
  ],
  [
    'limit missing',
    () => tokenBucket({} as never),
    TypeError,
    'tokenBucket: "limit" must be a positive integer, got undefined',
  ],
  [
    'limit 0',
    () => tokenBucket({ limit: 0 }),
    RangeError,
    'tokenBucket: "limit" must be a positive integer, got 0',
  ],
  [
    'limit negative',
    () => leakyBucket({ limit: -5 }),
    RangeError,
    'leakyBucket: "limit" must be a positive integer, got -5',
  ],
  [
    'limit fraction',
    () => slidingWindow({ limit: 2.5 }),
    RangeError,
    'slidingWindow: "limit" must be a positive integer, got 2.5',
  ],
  [
    'limit NaN',
    () => fixedWindow({ limit: Number.NaN }),
    RangeError,
    'fixedWindow: "limit" must be a positive integer, got NaN',
  ],
  [
    'limit Infinity',
    () => warmUpTokenBucket({ limit: Number.POSITIVE_INFINITY, warmUp: '1s' }),
    RangeError,
    'warmUpTokenBucket: "limit" must be a positive integer, got Infinity',
  ],
  [
    'limit string',
    () => tokenBucket({ limit: '10' as never }),
    TypeError,
    'tokenBucket: "limit" must be a positive integer, got "10"',
  ],
  [
    'capacity 0',
    () => tokenBucket({ limit: 10, capacity: 0 }),
    RangeError,
    'tokenBucket: "capacity" must be a positive integer, got 0',
  ],
  [
    'capacity fraction',
    () => warmUpTokenBucket({ limit: 10, capacity: 1.5, warmUp: 0 }),
    RangeError,
    'warmUpTokenBucket: "capacity" must be a positive integer, got 1.5',
  ],
  [
    'window 0',
    () => tokenBucket({ limit: 1, window: 0 }),
    RangeError,
    'tokenBucket: "window" must be a positive duration, got 0',
  ],
  [
    'window "0s"',
    () => slidingWindow({ limit: 1, window: '0s' }),
    RangeError,
    'slidingWindow: "window" must be a positive duration, got "0s"',
  ],
  [
    'window negative',
    () => fixedWindow({ limit: 1, window: -1000 }),
    RangeError,
    `fixedWindow: "window" ${DURATION_RULE}, got -1000`,
  ],
  [
    'window typo',
    () => leakyBucket({ limit: 1, window: '1 sec' as never }),
    RangeError,
    `leakyBucket: "window" ${DURATION_RULE}, got "1 sec" (did you mean '1s'?)`,
  ],
  [
    'slots 0',
    () => slidingWindow({ limit: 1, slots: 0 }),
    RangeError,
    'slidingWindow: "slots" must be an integer from 1 to 10000, got 0',
  ],
  [
    'slots fraction',
    () => slidingWindow({ limit: 1, slots: 2.5 }),
    RangeError,
    'slidingWindow: "slots" must be an integer from 1 to 10000, got 2.5',
  ],
  [
    'warmUp missing',
    () => warmUpTokenBucket({ limit: 1 } as never),
    TypeError,
    `warmUpTokenBucket: "warmUp" is required (a duration such as '30s'), got undefined`,
  ],
  [
    'warmUp negative',
    () => warmUpTokenBucket({ limit: 1, warmUp: -1 }),
    RangeError,
    `warmUpTokenBucket: "warmUp" ${DURATION_RULE}, got -1`,
  ],
  [
    'max 0',
    () => concurrency({ max: 0 }),
    RangeError,
    'concurrency: "max" must be a positive integer, got 0',
  ],
  [
    'max missing',
    () => concurrency({} as never),
    TypeError,
    'concurrency: "max" must be a positive integer, got undefined',
  ],
  [
    'maxQueue negative',
    () => concurrency({ max: 1, maxQueue: -1 }),
    RangeError,
    'concurrency: "maxQueue" must be a non-negative integer or Infinity, got -1',
  ],
  [
    'maxQueue fraction',
    () => concurrency({ max: 1, maxQueue: 0.5 }),
    RangeError,
    'concurrency: "maxQueue" must be a non-negative integer or Infinity, got 0.5',
  ],
  [
    'name empty',
    () => tokenBucket({ limit: 1, name: '' }),
    TypeError,
    'tokenBucket: "name" must be a non-empty string, got ""',
  ],
  [
    'name number',
    () => concurrency({ max: 1, name: 7 as never }),
    TypeError,
    'concurrency: "name" must be a non-empty string, got 7',
  ],
  // Issue 11: misspelt options used to be ignored, silently leaving the default in force.
  [
    'windowMs instead of window',
    () => tokenBucket({ limit: 100, windowMs: 60_000 } as never),
    TypeError,
    'tokenBucket: unknown option "windowMs" (did you mean "window"?)',
  ],
  [
    'misspelt capacity',
    () => warmUpTokenBucket({ limit: 1, warmUp: '1s', capasity: 5 } as never),
    TypeError,
    'warmUpTokenBucket: unknown option "capasity" (did you mean "capacity"?)',
  ],
  [
    'option from another algorithm',
    () => leakyBucket({ limit: 1, capacity: 5 } as never),
    TypeError,
    'leakyBucket: unknown option "capacity"',
  ],
  [
    'misspelt maxQueue',
    () => concurrency({ max: 1, maxqueue: 5 } as never),
    TypeError,
    'concurrency: unknown option "maxqueue" (did you mean "maxQueue"?)',
  ],
  // Issue 10: capacity × window past 2^53 ticks admitted everything.
  [
    'window too long to count exactly',
    () => tokenBucket({ limit: 1, window: Number.MAX_VALUE }),
    RangeError,
    `tokenBucket: "window" ${WINDOW_CAP}, got ${Number.MAX_VALUE}`,
  ],
  // Every algorithm's windows stop at 2^53 µs (not ms), and the message says so.
  [
    'a window one microsecond past 2^53',
    () => fixedWindow({ limit: 1, window: '9007199254741ms' }),
    RangeError,
    `fixedWindow: "window" ${WINDOW_CAP}, got "9007199254741ms"`,
  ],
  [
    'a sliding window of 2^53 ms',
    () => slidingWindow({ limit: 1, window: 2 ** 53 }),
    RangeError,
    `slidingWindow: "window" ${WINDOW_CAP}, got ${2 ** 53}`,
  ],
  [
    'a leaky bucket of a million years',
    () => leakyBucket({ limit: 1, window: '365000000d' }),
    RangeError,
    `leakyBucket: "window" ${WINDOW_CAP}, got "365000000d"`,
  ],
  [
    'a warm-up bucket whose cold interval passes 2^53 microseconds',
    () => warmUpTokenBucket({ limit: 1, window: '3002399751580.331ms', warmUp: '1s' }),
    RangeError,
    'warmUpTokenBucket: "window" divided by the limit and times 3 × the capacity (3 × 1) must be at most 2^53 microseconds, got "3002399751580.331ms"',
  ],
  [
    'a warm-up past 2^53 microseconds',
    () => warmUpTokenBucket({ limit: 1, warmUp: '104250d' }),
    RangeError,
    `warmUpTokenBucket: "warmUp" ${WINDOW_CAP}, got "104250d"`,
  ],
  [
    'capacity × window past 2^53',
    () => tokenBucket({ limit: 1, capacity: 2 ** 30, window: '1d' }),
    RangeError,
    `tokenBucket: "window" divided by the limit and times the capacity (${2 ** 30}) must be at most 2^53 microseconds, got "1d"`,
  ],
  // Issue 24: once now / slot passed 2^53 the generation loop never ended.
  [
    'a window shorter than a microsecond',
    () => slidingWindow({ limit: 5, window: 1e-15 }),
    RangeError,
    'slidingWindow: "window" must be at least one microsecond (0.001 ms), got 1e-15',
  ],
  [
    'a slot shorter than a microsecond',
    () => slidingWindow({ limit: 5, window: '5ms', slots: 10_000 }),
    RangeError,
    'slidingWindow: "window" must be at least one microsecond per slot (10000 slots: 10 ms), got "5ms"',
  ],
  [
    'a window of a fraction of a microsecond',
    () => fixedWindow({ limit: 5, window: 0.0015 }),
    RangeError,
    'fixedWindow: "window" must be a whole number of microseconds, got 0.0015',
  ],
  [
    'limit past 2^53',
    () => slidingWindow({ limit: 2 ** 60 }),
    RangeError,
    `slidingWindow: "limit" must be a positive integer, got ${2 ** 60}`,
  ],
  [
    'slots beyond memory sense',
    () => slidingWindow({ limit: 1, slots: 1e9 }),
    RangeError,
    'slidingWindow: "slots" must be an integer from 1 to 10000, got 1000000000',
  ],
  // Issue 11: null meant "no warm-up" while undefined was refused.
  [
    'warmUp null',
    () => warmUpTokenBucket({ limit: 1, warmUp: null as never }),
    RangeError,
    `warmUpTokenBucket: "warmUp" ${DURATION_RULE}, got null`,
  ],
  [
    'name past 128 characters',
    () => tokenBucket({ limit: 1, name: 'n'.repeat(1 << 20) }),
    RangeError,
    `tokenBucket: "name" must be at most 128 characters, got "${'n'.repeat(61)}..."`,
  ],
  [
    'clock not a clock',
    () => fixedWindow({ limit: 1, clock: { now: () => 0 } as never }),
    TypeError,
    'fixedWindow: "clock" must be an object with now() and sleep(), got an object',
  ],
]

describe('factory options', () => {
  it.each(badOptions)('%s', (_, create, type, message) => {
    expect(create).toThrow(new type(message))
    expect(create).toThrow(type)
  })

  it('accepts a window of 2^53 − 1 microseconds in every algorithm (a third of it warming up)', () => {
    const window = '9007199254740.991ms'
    // At time 0: a bucket's next free instant is then τ itself, still below 2^53 µs.
    const clock = new ManualClock(0)
    const limiters = [
      tokenBucket({ limit: 1, window, clock }),
      leakyBucket({ limit: 1, window, clock }),
      fixedWindow({ limit: 1, window, clock }),
      slidingWindow({ limit: 1, window, clock }),
      // A cold interval is three windows; warmUp itself may be as long as any window.
      warmUpTokenBucket({ limit: 1, window: '3002399751580.33ms', warmUp: window, clock }),
    ]
    expect(limiters.map((l) => l.tryAcquire())).toEqual([true, true, true, true, true])
  })
})

type AnyLimiter = RateLimiter | ConcurrencyLimiter
const limiters: [string, () => AnyLimiter][] = [
  ['tokenBucket', () => tokenBucket({ limit: 5, clock: new ManualClock() })],
  ['leakyBucket', () => leakyBucket({ limit: 5, clock: new ManualClock() })],
  ['warmUpTokenBucket', () => warmUpTokenBucket({ limit: 5, warmUp: 0, clock: new ManualClock() })],
  ['slidingWindow', () => slidingWindow({ limit: 5, clock: new ManualClock() })],
  ['fixedWindow', () => fixedWindow({ limit: 5, clock: new ManualClock() })],
  ['concurrency', () => concurrency({ max: 5, clock: new ManualClock() })],
]

const badPermits: [unknown, ErrorConstructor, string][] = [
  [0, RangeError, '0'],
  [-1, RangeError, '-1'],
  [1.5, RangeError, '1.5'],
  [Number.NaN, RangeError, 'NaN'],
  [Number.POSITIVE_INFINITY, RangeError, 'Infinity'],
  ['2', TypeError, '"2"'],
  [null, TypeError, 'null'],
]

describe.each(limiters)('%s permits', (factory, create) => {
  const methods = ['tryAcquire', 'retryAfterMs', 'refund', 'release', 'tryEnter'] as const
  it.each(badPermits)(
    'rejects %j, naming the method, and changes nothing',
    (permits, type, shown) => {
      const limiter = create()
      const before = limiter.availablePermits()
      for (const method of methods) {
        const fn = (limiter as unknown as Record<string, ((n: unknown) => unknown) | undefined>)[
          method
        ]
        if (fn === undefined) continue
        expect(() => fn.call(limiter, permits)).toThrow(
          new type(`${factory}.${method}: "permits" must be a positive integer, got ${shown}`),
        )
      }
      expect(limiter.availablePermits()).toBe(before)
    },
  )

  it('defaults permits to 1', () => {
    const limiter: Limiter = create()
    const before = limiter.availablePermits()
    expect(limiter.tryAcquire()).toBe(true)
    expect(limiter.availablePermits()).toBe(before - 1)
  })
})
