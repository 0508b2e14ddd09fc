/**
 * For sluice's own packages (the HTTP layer and the stores): the algorithm registry,
 * compact limiters, whose whole state is one number a store can keep per key, keyed
 * kernels, which keep every time-based limiter's per-key state in rows of typed arrays,
 * and the priority wait queue every bulkhead shares.
 * No compatibility promise between minor versions; applications use `@sluice/core`.
 *
 * @module
 */
export type { AlgorithmDefinition } from './algorithm'
export { algorithmDefinition } from './algorithms'
export { isCompact, isPortable } from './compact'
export type { Quota } from './kernel'
export { type KeyedLimiter, keyedLimiter } from './keyed'
export {
  PRIORITY_OPTIONS,
  partitionName,
  type QueueSettings,
  readPriority,
  readQueueSettings,
} from './priority/priority'
export { SlotQueue } from './priority/slot-queue'
export type { CompactRateLimiter, PortableRateLimiter } from './types'
