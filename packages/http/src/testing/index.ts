/**
 * Test kits for code built on `@sluice/http`: the HTTP scenarios every adapter must pass
 * (`runAdapterScenarios`), the contract every store must pass (`runStoreContract`) and the
 * model-based store test (`runStoreModel`: random sequences compared field for field with
 * the core kernels), so an adapter or a store written anywhere runs the same suite as
 * sluice's own. They use
 * vitest's `describe`/`it`/`expect`.
 *
 * @example
 * ```ts
 * import { runStoreContract } from '@sluice/http/testing'
 * runStoreContract('myStore', () => myStore())
 * ```
 *
 * @module
 */

export { forgetWarnings } from '@sluice/keyed/store'
export {
  runStoreContract,
  runStoreModel,
  type StoreContractOptions,
  type StoreModelClock,
  type StoreModelOptions,
  type WarningWatch,
  warningsOf,
  watchWarnings,
} from '@sluice/keyed/testing'
export * from './scenarios'
