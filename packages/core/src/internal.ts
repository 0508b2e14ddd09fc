/**
 * For sluice's own packages (the keyed layer and the stores): the algorithm registry and
 * the kernels, which keep every time-based algorithm's per-key state in rows of typed
 * arrays and decide on them at a time they are given. No compatibility promise between
 * minor versions; applications use `@sluice/core`.
 *
 * @module
 */
export type { AlgorithmDefinition } from './algorithm'
export { algorithmDefinition, rateKernel } from './algorithms'
export { micros, mulAddDiv, mulDivCeil, mulDivMod, PAIR } from './exact'
export type { Quota, RateKernel } from './kernel'
export { type Counts, slotCap } from './sliding-window/kernel'
