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
      readonly policy: string
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

/**
 * One policy's result as the object answers it. JSON has no Infinity: a `retryAfterMs` of
 * null means never.
 */
export interface WireResult {
  readonly allowed: boolean
  readonly remaining: number
  readonly resetMs: number
  readonly retryAfterMs: number | null
  readonly lease?: { readonly id: string; readonly permits: number }
  readonly receipt?: number
  readonly blocked?: true
}

/** The answer to `take` (and, with `allowed` unused, to `get`). */
export interface WireTake {
  readonly allowed: boolean
  readonly results: readonly WireResult[]
}
