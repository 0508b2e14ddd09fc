import { costAt } from './call-checks'
import type { OnError } from './remote-options'
import type { Cost, Lease, Policy, PolicyResult, Store, TakeResult } from './store'

// Lease ids that never reach the backend: taken from the local store, or admitted uncounted.
const LOCAL = 'local:'
const UNCOUNTED = 'uncounted:'

/** Options of {@link Fallback}: a remote store's `onError`, `local` and `probeInterval`, as read. */
export interface FallbackOptions {
  readonly onError: OnError
  /** The store that answers with `onError: 'local'`. */
  readonly local: Store | undefined
  /** A refusal's wait: when the backend is tried again. */
  readonly probeMs: number
}

/**
 * What a remote store answers while its backend (or the shard of a key) is out of use, by
 * `onError`: `'local'` decides in the `local` store, `'deny'` refuses with a wait of one
 * `probeInterval`, `'allow'` admits uncounted. Leases and receipts it hands out are marked
 * as its own (lease ids `local:…` and `uncounted:…`, receipts negative), so the release or
 * refund of a decision made here comes back here, whatever the backend does meanwhile.
 *
 * @example
 * ```ts
 * const fallback = new Fallback({ onError, local, probeMs })
 * if (health.outOfUse(shard)) return fallback.take(key, policies, cost)
 * // release: if (await fallback.release(key, policy, lease)) return
 * ```
 */
export class Fallback {
  readonly #onError: OnError
  readonly #local: Store | undefined
  readonly #probeMs: number
  /** The local store's leases, by the id handed out for them. */
  readonly #leases = new Map<string, Lease>()

  constructor(options: FallbackOptions) {
    this.#onError = options.onError
    this.#local = options.local
    this.#probeMs = options.probeMs
  }

  /** Answers a take. */
  async take(key: string, policies: readonly Policy[], cost: Cost): Promise<TakeResult> {
    const local = this.#local
    if (local === undefined) {
      const allowed = this.#onError === 'allow'
      return {
        allowed,
        results: policies.map((policy, i) => {
          const result = this.#substitute(policy, allowed)
          if (!allowed || policy.spec.algorithm !== 'concurrency') return result
          const lease = { id: `${UNCOUNTED}${crypto.randomUUID()}`, permits: costAt(cost, i) }
          return { ...result, lease }
        }),
      }
    }
    const taken = await local.take(key, policies, cost)
    return {
      allowed: taken.allowed,
      results: taken.results.map((result) => {
        if (result.lease !== undefined) {
          const id = `${LOCAL}${crypto.randomUUID()}`
          this.#leases.set(id, result.lease)
          return { ...result, lease: { id, permits: result.lease.permits } }
        }
        // Negative, so a refund can tell a local receipt from a backend's (never negative).
        if (result.receipt !== undefined) return { ...result, receipt: -1 - result.receipt }
        return result
      }),
    }
  }

  /** Answers a force: the local store takes; otherwise each policy as `get` answers it. */
  async force(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
  ): Promise<readonly PolicyResult[]> {
    if (this.#local !== undefined) return this.#local.force(key, policies, cost)
    return this.get(key, policies)
  }

  /** Answers a get. */
  async get(key: string, policies: readonly Policy[]): Promise<readonly PolicyResult[]> {
    if (this.#local !== undefined) return this.#local.get(key, policies)
    return policies.map((policy) => this.#substitute(policy, this.#onError === 'allow'))
  }

  /** Blocks the key in the local store too, so that the block holds while the backend is away. */
  async block(key: string, policies: readonly Policy[], ms: number): Promise<void> {
    await this.#local?.block(key, policies, ms)
  }

  /**
   * Releases a lease this fallback handed out (an uncounted one is nothing to release).
   * False when the lease is the backend's: the store releases it there.
   */
  async release(key: string, policy: Policy, lease: Lease): Promise<boolean> {
    if (lease.id.startsWith(UNCOUNTED)) return true
    if (!lease.id.startsWith(LOCAL)) return false
    const inner = this.#leases.get(lease.id)
    if (inner === undefined) return true
    this.#leases.delete(lease.id)
    await this.#local?.release(key, policy, inner)
    return true
  }

  /**
   * Gives back what a take answered here took (its receipts are negative), or, while the
   * key's shard is out of use (`outOfUse`, asked only then), what was most likely taken
   * here (no receipts). Permits taken in the backend cannot be given back while it is
   * away. False when the store is to send the refund to the backend.
   */
  async refund(
    key: string,
    policies: readonly Policy[],
    cost: Cost,
    receipts: readonly (number | undefined)[] | undefined,
    outOfUse: () => boolean,
  ): Promise<boolean> {
    if (receipts?.some((receipt) => receipt !== undefined && receipt < 0)) {
      await this.#local?.refund(key, policies, cost, receipts.map(fromLocalReceipt))
      return true
    }
    if (!outOfUse()) return false
    if (receipts === undefined) await this.#local?.refund(key, policies, cost)
    return true
  }

  /** Forgets the key in the local store (a reset must not leave it limited there). */
  async reset(key: string, policies?: readonly Policy[]): Promise<void> {
    await this.#local?.reset(key, policies)
  }

  /** Forgets everything here: the local store's state and its leases. */
  async resetAll(): Promise<void> {
    await this.#local?.resetAll()
    this.#leases.clear()
  }

  /** A policy's answer without the backend: full when admitted, a wait of `probeMs` when refused. */
  #substitute(policy: Policy, allowed: boolean): PolicyResult {
    const base = { policy, allowed, limit: policy.limit }
    const probeMs = this.#probeMs
    if (!allowed) return { ...base, remaining: 0, resetMs: probeMs, retryAfterMs: probeMs }
    return { ...base, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 }
  }
}

function fromLocalReceipt(receipt: number | undefined): number | undefined {
  return receipt === undefined ? undefined : -1 - receipt
}
