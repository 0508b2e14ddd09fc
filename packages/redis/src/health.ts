import type { RedisStoreError } from './errors'

/** What {@link Health} needs from the store. */
export interface HealthHooks {
  /** A command routed by `key` (so it reaches the shard that failed), bounded by `timeout`. */
  probe(key: string): Promise<unknown>
  /** Whether probing still makes sense (false once the client was closed for good). */
  live(): boolean
  /** An outage starts: at least one shard confirmed down while none was. */
  down(error: RedisStoreError): void
  /** The outage is over: every shard answers again. */
  up(): void
  /** A shard answers again (confirmed or not): replay what waited for it. */
  recovered(): void
}

interface ShardState {
  /** A key that failed on this shard: the probe is routed by it. */
  readonly key: string
  readonly error: RedisStoreError
  /** Set once a probe failed too: from then on the failure is an outage, reported. */
  confirmed: boolean
}

/**
 * Health per shard (one shard unless the client is an ioredis Cluster). A failed call
 * takes its shard out of use at once (its decisions are answered by `onError`) and
 * probes it right away with a command routed by the key that failed: if the probe
 * answers, the failure was that call's alone (a slow script, a retried TRYAGAIN) and
 * nothing is reported; if it fails too, the outage is confirmed and reported once, and an
 * `unref`'d probe runs every `probeInterval`, with or without traffic, until it answers.
 * Routing the probe by the failed key is what keeps a Cluster from declaring recovery
 * while the failed shard is still down (a keyless PING reaches any healthy master).
 */
export class Health {
  readonly #hooks: HealthHooks
  readonly #probeMs: number
  readonly #down = new Map<string, ShardState>()
  /** Shards a probe is checking after a failure that may have been the call's own. */
  readonly #suspects = new Set<string>()
  #confirmed = 0
  /**
   * Bumped whenever a shard comes back. A call remembers it when it starts: a call that
   * started before a recovery failing late belongs to the episode that just ended, and
   * must not start a new one.
   */
  episode = 0

  constructor(hooks: HealthHooks, probeMs: number) {
    this.#hooks = hooks
    this.#probeMs = probeMs
  }

  /** True while any shard is out of use: only then is a key's shard worth looking up. */
  get anyDown(): boolean {
    return this.#down.size !== 0
  }

  /** `'down'` while any shard is out of use. */
  get status(): 'up' | 'down' {
    return this.#down.size === 0 ? 'up' : 'down'
  }

  isDown(shard: string): boolean {
    return this.#down.has(shard)
  }

  /** Reports a failed call on `shard` that started in episode `since`. */
  fail(shard: string, key: string, error: RedisStoreError, since: number): void {
    if (since !== this.episode || this.#down.has(shard)) return
    const state: ShardState = { key, error, confirmed: false }
    this.#down.set(shard, state)
    this.#probe(shard, state)
  }

  /**
   * Reports a failure that may be the call's own rather than the shard's (a multi-key call
   * that timed out while the Cluster client retried a TRYAGAIN): the shard stays in use,
   * and is taken out of it only if a probe fails too.
   */
  suspect(shard: string, key: string, error: RedisStoreError, since: number): void {
    if (since !== this.episode || this.#down.has(shard) || this.#suspects.has(shard)) return
    this.#suspects.add(shard)
    this.#hooks.probe(key).then(
      () => this.#suspects.delete(shard),
      () => {
        this.#suspects.delete(shard)
        this.fail(shard, key, error, this.episode)
      },
    )
  }

  #probe(shard: string, state: ShardState): void {
    this.#hooks.probe(state.key).then(
      () => this.#recover(shard, state),
      () => {
        if (this.#down.get(shard) !== state) return
        if (!state.confirmed) {
          state.confirmed = true
          if (++this.#confirmed === 1) this.#hooks.down(state.error)
        }
        if (!this.#hooks.live()) return
        setTimeout(() => this.#probe(shard, state), this.#probeMs).unref?.()
      },
    )
  }

  #recover(shard: string, state: ShardState): void {
    if (this.#down.get(shard) !== state) return
    this.#down.delete(shard)
    this.episode++
    if (state.confirmed && --this.#confirmed === 0) this.#hooks.up()
    this.#hooks.recovered()
  }
}
