/**
 * The contract every store must pass (`runStoreContract`), so a store written anywhere
 * runs the same suite as sluice's own, and `warningsOf`/`watchWarnings` to see the warnings
 * a setup, or a request, gives.
 * `runStoreContract` uses vitest's `describe`/`it`/`expect`.
 *
 * @example
 * ```ts
 * import { runStoreContract } from '@sluice/keyed/testing'
 * runStoreContract('myStore', () => myStore())
 * ```
 *
 * @module
 */
export { runStoreContract, type StoreContractOptions } from './store-contract'
export {
  runStoreModel,
  type StoreModelClock,
  type StoreModelOptions,
} from './store-model'
export { type WarningWatch, warningsOf, watchWarnings } from './warnings'
