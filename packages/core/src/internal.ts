/**
 * For sluice's own packages (the HTTP layer and the stores): the algorithm registry and
 * compact limiters, whose whole state is one number a store can keep per key. No
 * compatibility promise between minor versions; applications use `@sluice/core`.
 *
 * @module
 */
export type { AlgorithmDefinition } from './algorithm'
export { algorithmDefinition } from './algorithms'
export { isCompact, isPortable } from './compact'
export type { CompactRateLimiter, PortableRateLimiter } from './types'
