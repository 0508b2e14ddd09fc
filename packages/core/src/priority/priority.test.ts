import { describe, expect, it } from 'vitest'
import { adaptiveConcurrency } from '../adaptive/adaptive-concurrency'
import { normalizeSpec } from '../algorithms'
import { concurrency } from '../concurrency/concurrency'
import { createLimiter } from '../create-limiter'
import { bulkheaded } from '../decorators/bulkheaded'
import { partitionName, readPriority } from './priority'

describe('priorities', () => {
  it.each([
    ['critical', 2],
    ['default', 1],
    ['sheddable', 0],
    [undefined, 1],
    [7, 7],
    [-1.5, -1.5],
  ] as const)('%s is priority %s', (given, number) => {
    expect(readPriority('test', given)).toBe(number)
  })

  it.each([
    [
      'urgent',
      TypeError,
      `test: "priority" must be 'critical', 'default', 'sheddable' or a finite number, got "urgent"`,
    ],
    [
      'critcal',
      TypeError,
      `test: "priority" must be 'critical', 'default', 'sheddable' or a finite number, got "critcal" (did you mean 'critical'?)`,
    ],
    [
      Number.NaN,
      RangeError,
      `test: "priority" must be 'critical', 'default', 'sheddable' or a finite number, got NaN`,
    ],
    [
      null,
      TypeError,
      `test: "priority" must be 'critical', 'default', 'sheddable' or a finite number, got null`,
    ],
  ] as const)('refuses %s', (given, kind, message) => {
    expect(() => readPriority('test', given)).toThrow(new kind(message))
  })

  it('names partitions after their priority', () => {
    expect([0, 1, 2, 3, 0.5].map(partitionName)).toEqual([
      'sheddable',
      'default',
      'critical',
      '3',
      '0.5',
    ])
  })

  it('every entry point checks the priority it is given', async () => {
    const limiter = concurrency({ max: 1, maxQueue: 1 })
    expect(() => limiter.tryEnter({ priority: 'high' as never })).toThrow(
      new TypeError(
        `concurrency.tryEnter: "priority" must be 'critical', 'default', 'sheddable' or a finite number, got "high"`,
      ),
    )
    expect(() => limiter.tryEnter({ permit: 1 } as never)).toThrow(
      new TypeError('concurrency.tryEnter: unknown option "permit" (known: permits, priority)'),
    )
    expect(() => limiter.tryEnter({ permits: 0 })).toThrow(
      new RangeError('concurrency.tryEnter: "permits" must be a positive integer, got 0'),
    )
    await expect(limiter.enter({ priority: Number.POSITIVE_INFINITY })).rejects.toThrow(
      new RangeError(
        `concurrency.enter: "priority" must be 'critical', 'default', 'sheddable' or a finite number, got Infinity`,
      ),
    )
    expect(() => adaptiveConcurrency().tryEnter({ priority: 'low' as never })).toThrow(
      /^adaptiveConcurrency\.tryEnter: "priority" must be/,
    )
    expect(() => bulkheaded(limiter, { priority: 'top' as never })).toThrow(
      /^bulkheaded: "priority" must be/,
    )
    expect(limiter.inFlight).toBe(0)
  })
})

describe('priority options', () => {
  const share = 'must be a share of the limit in (0, 1]'
  it.each([
    [
      { partitions: 0.5 },
      TypeError,
      `concurrency: "partitions" must be an object of shares by priority, e.g. { critical: 0.5 }, got 0.5`,
    ],
    [
      { partitions: [0.5] },
      TypeError,
      `concurrency: "partitions" must be an object of shares by priority, e.g. { critical: 0.5 }, got an array`,
    ],
    [
      { partitions: { urgent: 0.5 } },
      TypeError,
      `concurrency: "partitions" has an unknown priority "urgent" (known: 'critical', 'default', 'sheddable' or a finite number)`,
    ],
    [
      { partitions: { sheddible: 0.5 } },
      TypeError,
      `concurrency: "partitions" has an unknown priority "sheddible" (known: 'critical', 'default', 'sheddable' or a finite number; did you mean 'sheddable'?)`,
    ],
    [
      { partitions: { critical: 0 } },
      RangeError,
      `concurrency: "partitions.critical" ${share}, got 0`,
    ],
    [
      { partitions: { critical: 1.5 } },
      RangeError,
      `concurrency: "partitions.critical" ${share}, got 1.5`,
    ],
    [
      { partitions: { critical: '50%' } },
      TypeError,
      `concurrency: "partitions.critical" ${share}, got "50%"`,
    ],
    [
      { partitions: { critical: 0.5, 2: 0.1 } },
      RangeError,
      `concurrency: "partitions" names priority 2 twice ("2" and "critical")`,
    ],
    [
      { partitions: { critical: 0.7, default: 0.5 } },
      RangeError,
      'concurrency: "partitions" shares must sum to at most 1, got 1.2 (critical 0.7 + default 0.5)',
    ],
    [
      { queuePolicy: 'lifo' },
      TypeError,
      `concurrency: "queuePolicy" must be one of 'fifo', 'codel', 'adaptive-lifo', got "lifo"`,
    ],
    [
      { queueTarget: '5ms' },
      TypeError,
      `concurrency: "queueTarget" applies to queuePolicy 'codel' or 'adaptive-lifo', not 'fifo'`,
    ],
    [
      { queuePolicy: 'fifo', queueInterval: '1s' },
      TypeError,
      `concurrency: "queueInterval" applies to queuePolicy 'codel' or 'adaptive-lifo', not 'fifo'`,
    ],
    [
      { queuePolicy: 'codel', queueTarget: 0 },
      RangeError,
      'concurrency: "queueTarget" must be a positive duration, got 0',
    ],
    [
      { queuePolicy: 'codel', queueTarget: '100ms' },
      RangeError,
      'concurrency: "queueInterval" must be longer than "queueTarget" (100 ms), got 100 ms',
    ],
  ])('concurrency(%j) is refused', (options, kind, message) => {
    expect(() => concurrency({ max: 4, ...(options as object) })).toThrow(new kind(message))
  })

  it('accepts shares that sum to 1 with floating-point noise, numbered priorities and Infinity-free specs', () => {
    expect(() =>
      concurrency({ max: 10, partitions: { critical: 0.7, default: 0.2, sheddable: 0.1 } }),
    ).not.toThrow()
    expect(() => concurrency({ max: 10, partitions: { '-1': 0.5, 3.5: 0.5 } })).not.toThrow()
  })

  it('adaptiveConcurrency takes the same options and checks them the same way', () => {
    expect(() => adaptiveConcurrency({ partitions: { critical: 2 } })).toThrow(
      new RangeError(`adaptiveConcurrency: "partitions.critical" ${share}, got 2`),
    )
    expect(() =>
      adaptiveConcurrency({ queuePolicy: 'adaptive-lifo', queueTarget: '2ms' }),
    ).not.toThrow()
  })

  it('are no part of a spec: they decide admission in one process, nothing a store shares', () => {
    expect(normalizeSpec({ algorithm: 'concurrency', max: 4 })).toEqual({
      algorithm: 'concurrency',
      max: 4,
      maxQueue: 0,
    })
    expect(() =>
      createLimiter({ algorithm: 'concurrency', max: 4, partitions: { critical: 0.5 } } as never),
    ).toThrow(/unknown option "partitions"/)
  })
})
