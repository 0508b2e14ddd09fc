import {
  type AdaptivePermit,
  adaptiveConcurrency,
  concurrency,
  type Partitions,
  type QueuePolicy,
} from '@sluice/core'
import { seededRandom } from '../adaptive/random'
import type { Gate, PriorityContender } from './simulate'

/** The queue the contenders with one may fill: large, as a user expecting bursts would set it. */
export const QUEUE = 1000

/** Half the slots guaranteed to critical traffic. */
export const CRITICAL_SHARE: Partitions = { critical: 0.5 }

/** The same, and a fifth guaranteed to sheddable traffic, so a critical surge cannot starve it. */
export const BOTH_SHARES: Partitions = { critical: 0.5, sheddable: 0.2 }

interface FixedOptions {
  readonly prioritized: boolean
  readonly maxQueue?: number
  readonly partitions?: Partitions
  readonly queuePolicy?: QueuePolicy
}

/** A bulkhead of `max` = C (the right limit: the adaptive section finds it). */
function fixed(id: string, label: string, options: FixedOptions): PriorityContender {
  const { prioritized, ...limits } = options
  return {
    id,
    label,
    gate: (clock, scenario): Gate => ({
      limiter: concurrency({ max: scenario.workers, clock, ...limits }),
      prioritized,
      waits: prioritized || (limits.maxQueue ?? 0) > 0,
      release: (permit) => permit.release(),
    }),
  }
}

const queued = (queuePolicy: QueuePolicy): PriorityContender =>
  fixed(queuePolicy, `priority + partitions, queue of ${QUEUE}: \`${queuePolicy}\``, {
    prioritized: true,
    partitions: CRITICAL_SHARE,
    maxQueue: QUEUE,
    queuePolicy,
  })

const none = fixed('none', 'no priority', { prioritized: false })
const priorityOnly = fixed('priority', 'priority only', { prioritized: true })
const partitioned = fixed('partitions', 'priority + partitions `{ critical: 0.5 }`', {
  prioritized: true,
  partitions: CRITICAL_SHARE,
})

/** Every contender of the scenario, in the order of the report. */
export const PRIORITY_CONTENDERS: readonly PriorityContender[] = [
  none,
  fixed('none-queue', `no priority, FIFO queue of ${QUEUE}`, {
    prioritized: false,
    maxQueue: QUEUE,
  }),
  priorityOnly,
  partitioned,
  queued('fifo'),
  queued('codel'),
  queued('adaptive-lifo'),
  {
    id: 'gradient2',
    label: 'priority + partitions, adaptive `max` (gradient2)',
    gate: (clock, scenario): Gate => ({
      limiter: adaptiveConcurrency({
        clock,
        random: seededRandom(scenario.seed + 1),
        partitions: CRITICAL_SHARE,
      }),
      prioritized: true,
      waits: true,
      release: (permit, late) => (permit as AdaptivePermit).release({ dropped: late }),
    }),
  },
]

/** The contenders of the reverse surge (critical traffic surging): what partitions keep for the rest. */
export const REVERSE_CONTENDERS: readonly PriorityContender[] = [
  none,
  priorityOnly,
  partitioned,
  fixed('both-shares', 'priority + partitions `{ critical: 0.5, sheddable: 0.2 }`', {
    prioritized: true,
    partitions: BOTH_SHARES,
  }),
]

/** The contenders the chart draws: the comparison, plain priorities, and a CoDel queue. */
export const CHART_IDS = ['none', 'priority', 'codel'] as const

/** The contender whose critical p99 without the surge the chart's bound is drawn from. */
export const CALM_REFERENCE = 'none'
