import { storeChannel } from './events'
import type { OnError } from './remote-options'
import { emitWarning } from './warnings'

/** An error a remote store hands to `onFailure`: a message and a stable `code`. */
export interface StoreFailure extends Error {
  readonly code: string
}

/** Options of {@link StoreHealth}. */
export interface StoreHealthOptions<Shard, E extends StoreFailure> {
  /** The store's factory: names it in `sluice:store` events and in warnings. */
  readonly store: string
  /** Named in the default failure warning: what decisions follow meanwhile. */
  readonly onError: OnError
  /** How often a down shard is tried again. */
  readonly probeMs: number
  /** Called once per outage; default: a warning with `warnings.down`. */
  readonly onFailure?: ((error: E) => void) | undefined
  /** Called once when the outage is over; default: a warning with `warnings.recovered`. */
  readonly onRecovery?: (() => void) | undefined
  /** The default warnings: their codes, and how they speak of the backend. */
  readonly warnings: {
    /** Code of the failure warning, e.g. `ERR_SLUICE_REDIS_DOWN`. */
    readonly down: string
    /** Ends the failure warning: `until ${until}`, e.g. `'it answers again'`. */
    readonly until: string
    /** Code of the recovery warning, e.g. `ERR_SLUICE_REDIS_RECOVERED`. */
    readonly recovered: string
    /** The recovery warning, e.g. `'Redis answers again; decisions are back on Redis'`. */
    readonly recovery: string
  }
  /**
   * A call routed by `key` to the failed shard, bounded by the store's timeout. With it, a
   * failure is an outage only once a probe fails too (a failed call alone may be that
   * call's: a slow script), and a down shard is probed every `probeMs`, with or without
   * traffic. Without it (a runtime whose I/O belongs to a request, as on Workers), a
   * failure is an outage at once, and the first call on a down shard once `probeMs` has
   * passed since it last failed is let through: it is the probe.
   */
  readonly probe?: ((shard: Shard, key: string) => Promise<unknown>) | undefined
  /** Whether probing still makes sense (false once the client was closed for good). Default: always. */
  readonly live?: (() => boolean) | undefined
  /** A shard answers again (confirmed down or not): replay what waited for it. */
  readonly recovered?: ((shard: Shard) => void) | undefined
}

interface ShardState<E> {
  /** A key that failed on this shard: the probe is routed by it. */
  readonly key: string
  readonly error: E
  /** Set once the failure is an outage (a probe failed too, or at once without probes): reported. */
  confirmed: boolean
  /** `performance.now()` of the last failure on it: without probes, when it may be tried again. */
  failedAt: number
}

/**
 * The health of a remote store's backend, per shard (a Redis Cluster master, a Durable
 * Object; one shard for a store that has no such notion), and its `onError` reports. A
 * failed call takes its shard out of use at once: its decisions follow `onError` until
 * the shard answers again. An outage (at least one shard confirmed down while none was)
 * is reported once, to `onFailure` (default: a `SluiceWarning`) and on the `sluice:store`
 * channel; its end (every confirmed shard answers again) once, to `onRecovery`. A hook
 * that throws never turns a decision into an error.
 *
 * A call remembers {@link episode} when it starts and hands it to {@link fail}: a call that
 * started before a recovery and fails late belongs to the outage that just ended, and must
 * not start a new one.
 *
 * @example
 * ```ts
 * const health = new StoreHealth<number, MyStoreError>({ store: 'myStore', onError, probeMs, warnings })
 * if (health.outOfUse(shard)) return fallback.take(key, policies, cost)
 * const since = health.episode
 * try {
 *   const reply = await call(shard)
 *   health.answered(shard)
 * } catch (error) {
 *   health.fail(shard, key, toStoreError(error), since)
 * }
 * ```
 */
export class StoreHealth<Shard, E extends StoreFailure> {
  readonly #options: StoreHealthOptions<Shard, E>
  readonly #down = new Map<Shard, ShardState<E>>()
  /** Shards a probe is checking after a failure that may have been the call's own (see {@link suspect}). */
  readonly #suspects = new Set<Shard>()
  #confirmed = 0
  /** Bumped whenever a shard comes back. */
  episode = 0

  constructor(options: StoreHealthOptions<Shard, E>) {
    this.#options = options
  }

  /** True while any shard is out of use: only then is a key's shard worth looking up. */
  get anyDown(): boolean {
    return this.#down.size !== 0
  }

  /** `'down'` while any shard is out of use. */
  get status(): 'up' | 'down' {
    return this.#down.size === 0 ? 'up' : 'down'
  }

  /**
   * Whether a call on `shard` is to be answered by `onError` without trying it: while the
   * shard is down. Without probes, one call every `probeMs` is let through as the probe.
   */
  outOfUse(shard: Shard): boolean {
    const state = this.#down.get(shard)
    if (state === undefined) return false
    if (this.#options.probe !== undefined) return true
    const now = performance.now()
    if (now - state.failedAt < this.#options.probeMs) return true
    state.failedAt = now
    return false
  }

  /** Reports a failed call on `shard`, routed by `key`, that started in episode `since`. */
  fail(shard: Shard, key: string, error: E, since: number): void {
    if (since !== this.episode) return
    const known = this.#down.get(shard)
    if (known !== undefined) {
      known.failedAt = performance.now()
      return
    }
    const state: ShardState<E> = { key, error, confirmed: false, failedAt: performance.now() }
    this.#down.set(shard, state)
    if (this.#options.probe === undefined) this.#confirm(state)
    else this.#probe(shard, state)
  }

  /**
   * Reports a failure that may be the call's own rather than the shard's (a Redis Cluster
   * call over several keys that timed out while the client still retried its TRYAGAIN):
   * the shard stays in use, and is taken out of it only if a probe fails too. Without
   * `probe`, nothing can tell, and this is {@link fail}.
   */
  suspect(shard: Shard, key: string, error: E, since: number): void {
    const probe = this.#options.probe
    if (probe === undefined) {
      this.fail(shard, key, error, since)
      return
    }
    if (since !== this.episode || this.#down.has(shard) || this.#suspects.has(shard)) return
    this.#suspects.add(shard)
    probe(shard, key).then(
      () => this.#suspects.delete(shard),
      () => {
        this.#suspects.delete(shard)
        this.fail(shard, key, error, this.episode)
      },
    )
  }

  /** Reports a call on `shard` that answered: a down shard is back. */
  answered(shard: Shard): void {
    const state = this.#down.get(shard)
    if (state !== undefined) this.#recover(shard, state)
  }

  #probe(shard: Shard, state: ShardState<E>): void {
    const { probe, live, probeMs } = this.#options
    probe!(shard, state.key).then(
      () => this.#recover(shard, state),
      () => {
        if (this.#down.get(shard) !== state) return
        this.#confirm(state)
        if (live !== undefined && !live()) return
        const timer = setTimeout(() => this.#probe(shard, state), probeMs) as {
          unref?: () => void
        }
        // A probe waiting for a dead backend must not keep the process alive.
        timer.unref?.()
      },
    )
  }

  #confirm(state: ShardState<E>): void {
    if (state.confirmed) return
    state.confirmed = true
    if (++this.#confirmed === 1) this.#reportFailure(state.error)
  }

  #recover(shard: Shard, state: ShardState<E>): void {
    if (this.#down.get(shard) !== state) return
    this.#down.delete(shard)
    this.episode++
    if (state.confirmed && --this.#confirmed === 0) this.#reportRecovery()
    this.#options.recovered?.(shard)
  }

  #reportFailure(error: E): void {
    const { store, onFailure, onError, warnings } = this.#options
    safely(() => {
      if (onFailure !== undefined) return onFailure(error)
      // The warning names the store itself: the error's own "store: " would say it twice.
      const own = `${store}: `
      const message = error.message.startsWith(own)
        ? error.message.slice(own.length)
        : error.message
      emitWarning(
        store,
        warnings.down,
        `${message} (${error.code}); answering with onError '${onError}' until ${warnings.until}`,
        true,
      )
    })
    if (storeChannel.hasSubscribers) storeChannel.publish({ event: 'failure', store, error })
  }

  #reportRecovery(): void {
    const { store, onRecovery, warnings } = this.#options
    safely(() => {
      if (onRecovery !== undefined) onRecovery()
      else emitWarning(store, warnings.recovered, warnings.recovery, true)
    })
    if (storeChannel.hasSubscribers) storeChannel.publish({ event: 'recovery', store })
  }
}

// A throwing hook must not turn a decision into an error.
function safely(hook: () => void): void {
  try {
    hook()
  } catch {}
}
