import type { Cost, StoredPolicy } from '@sluice/keyed/store'

/** A policy as it travels to the object: what decides, not how it is shown. */
export type WirePolicy = StoredPolicy

/** One operation of the store on one object, sent as JSON in a POST body. */
export type Operation =
  | {
      readonly op: 'take'
      readonly key: string
      readonly policies: readonly WirePolicy[]
      readonly cost: Cost
      /** How long a concurrency slot taken now is held at most. */
      readonly leaseTtlMs: number
      /** The id of the slots it takes, chosen by the store: a take sent twice takes once. */
      readonly lease?: string | undefined
    }
  | {
      readonly op: 'refund'
      readonly key: string
      readonly policies: readonly WirePolicy[]
      readonly cost: Cost
      readonly receipts?: readonly (number | null)[] | undefined
    }
  | {
      readonly op: 'force'
      readonly key: string
      readonly policies: readonly WirePolicy[]
      readonly cost: Cost
    }
  | {
      readonly op: 'block'
      readonly key: string
      readonly policies: readonly WirePolicy[]
      readonly ms: number
    }
  | {
      readonly op: 'release'
      readonly key: string
      /** The one concurrency policy the lease was taken under. */
      readonly policies: readonly [WirePolicy]
      readonly lease: string
    }
  | { readonly op: 'get'; readonly key: string; readonly policies: readonly WirePolicy[] }
  /** `policies` are ids; all of the key's state when absent. */
  | {
      readonly op: 'reset'
      readonly key: string
      readonly policies?: readonly string[] | undefined
    }
  | { readonly op: 'resetAll' }
