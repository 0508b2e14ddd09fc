import type { BulkheadOptions } from '@sluice/express'
import type { Request } from 'express'

const byHeader = (req: Request) => (req.get('x-priority') === 'critical' ? 'critical' : 'sheddable')

/**
 * The loopback check's server: a bulkhead of `max` slots around a handler that answers
 * after `serviceMs`, so a capacity of `max / serviceMs` requests per millisecond, and the
 * bulkhead each variant puts in front of it.
 */
export const CHECK = {
  max: 16,
  serviceMs: 50,
  variants: {
    none: { max: 16 },
    priority: { max: 16, priority: byHeader },
    codel: {
      max: 16,
      maxQueue: 100,
      priority: byHeader,
      partitions: { critical: 0.5 },
      queuePolicy: 'codel',
      // CoDel's defaults (5 ms, 100 ms) are for requests of a few milliseconds: scaled to 50 ms.
      queueTarget: '25ms',
      queueInterval: '500ms',
    },
  } satisfies Record<string, BulkheadOptions>,
} as const

/** The variants of the loopback check. */
export type CheckVariant = keyof typeof CHECK.variants
