import type { Carry, NormalizedSpec } from '@sluice/core'
import type { Cost, Penalty, WireTake } from '@sluice/keyed/store'

/** Marks the store's messages among a process's others (user messages, PM2's). */
export const TAG = 'sluice:cluster-store'

/**
 * How many policy numbers a connection uses: a worker that made more policies than this
 * (a limit per tenant) gives the least recently used one's number to the next, whose
 * definition replaces it at the host, so neither side keeps more than this many.
 */
export const MAX_POLICY_REFS = 1024

/**
 * A policy as a request names it: its number on this connection (1 to
 * {@link MAX_POLICY_REFS}) once the host knows it, and the first time its definition too.
 * The host keeps each connection's definitions, so a decision carries a few numbers, not
 * the specs.
 */
export type WirePolicy =
  | number
  | {
      readonly ref: number
      readonly name: string
      readonly spec: NormalizedSpec
      readonly block?: Penalty | undefined
      /** How state written under another spec of this name carries over (the host converts it). */
      readonly carry?: Carry | undefined
    }

/** One call of a worker's store, answered by a {@link Reply} with the same `id`. */
export type Request = { readonly id: number } & (
  | {
      readonly op: 'take' | 'force'
      readonly key: string
      readonly policies: readonly WirePolicy[]
      readonly cost: Cost
    }
  | {
      readonly op: 'refund'
      readonly key: string
      readonly policies: readonly WirePolicy[]
      readonly cost: Cost
      /** JSON has no undefined in arrays: a missing receipt is null. */
      readonly receipts: readonly (number | null)[] | null
    }
  | {
      /** A refund of `back` (with `receipts`), then a force of `more`, answered as a force. */
      readonly op: 'settle'
      readonly key: string
      readonly policies: readonly WirePolicy[]
      readonly back: Cost
      readonly more: Cost
      readonly receipts: readonly (number | null)[] | null
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
      readonly policies: readonly [WirePolicy]
      /** The id the host gave the slot in its take's answer. */
      readonly lease: string
    }
  | { readonly op: 'get'; readonly key: string; readonly policies: readonly WirePolicy[] }
  | {
      readonly op: 'reset'
      readonly key: string
      /** All of the key's state when null. */
      readonly policies: readonly WirePolicy[] | null
    }
  | { readonly op: 'resetAll' | 'ping' }
)

/**
 * The host's answer: a decision (take, force, get) as `toWire` of `@sluice/keyed/store`
 * writes it, null for the calls that answer nothing, or the message of the host's error.
 */
export type Reply = { readonly id: number } & (
  | { readonly value: WireTake | null }
  | {
      readonly error: string
      /**
       * The request named a policy number the host does not know (its definition never
       * arrived): the worker defines its policies again.
       */
      readonly unknownPolicy?: true
    }
)

/**
 * What travels: the calls a worker made in one turn of its event loop, or the host's
 * answers to them, in one message. Under load one message carries many decisions, so the
 * cost of a message (a write, a read, an event on each side) is shared.
 */
export interface Batch<T> {
  readonly tag: typeof TAG
  /** The store's `name`: stores of different names share nothing. */
  readonly store: string
  readonly batch: readonly T[]
}

/** Whether `message` is a batch of the store named `store`. */
export function isBatch<T>(message: unknown, store: string): message is Batch<T> {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as Batch<T>).tag === TAG &&
    (message as Batch<T>).store === store &&
    Array.isArray((message as Batch<T>).batch)
  )
}

/** Receipts as JSON carries them: it has no undefined in arrays, so a missing one is null. */
export function toWireReceipts(
  receipts: readonly (number | undefined)[] | undefined,
): (number | null)[] | null {
  return receipts?.map((receipt) => receipt ?? null) ?? null
}

/** The receipts a {@link toWireReceipts} sent. */
export function fromWireReceipts(
  receipts: readonly (number | null)[] | null,
): (number | undefined)[] | undefined {
  return receipts?.map((receipt) => receipt ?? undefined)
}
