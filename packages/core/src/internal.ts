/**
 * For sluice's own packages (the keyed layer, the HTTP layer and the stores): the
 * algorithm registry; the kernels, which keep every time-based algorithm's per-key state
 * in rows of typed arrays and decide on them at a time they are given; and the priority
 * wait queue every bulkhead shares. No compatibility promise between minor versions;
 * applications use `@sluice/core`.
 *
 * @module
 */
export type { AlgorithmDefinition } from './algorithm'
export { algorithmDefinition, rateKernel } from './algorithms'
export { readCarry } from './carry'
export { formatDuration } from './duration'
export { micros, mulAddDiv, mulDivCeil, mulDivMod, PAIR } from './exact'
export type { Quota, RateKernel } from './kernel'
export {
  PRIORITY_OPTIONS,
  partitionName,
  type QueueSettings,
  readPriority,
  readQueueSettings,
} from './priority/priority'
export { SlotQueue } from './priority/slot-queue'
export { type Counts, slotCap } from './sliding-window/kernel'
export { emitWarning, forgetWarnings, warnIfBareMilliseconds } from './warnings'
