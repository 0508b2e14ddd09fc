/**
 * Test kits for code built on `@sluice/http`: the HTTP scenarios every adapter must pass
 * (`runAdapterScenarios`) and the contract every store must pass (`runStoreContract`),
 * so an adapter or a store written anywhere runs the same suite as sluice's own. They use
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
  type StoreContractOptions,
  type WarningWatch,
  warningsOf,
  watchWarnings,
} from '@sluice/keyed/testing'
export * from './scenarios'
