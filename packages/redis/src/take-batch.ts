import { createHash } from 'node:crypto'
import type { ScriptRunner } from './script-runner'
import type { Script } from './scripts'

/** Takes one script call carries at most: about a millisecond of Redis at the slow path. */
const MAX_BATCH = 128

/**
 * The one-policy script `script`, run once per take of a batch on the same key, its
 * replies in order (issue 27, "exact mode gets faster too"). `ARGV` is every take's
 * arguments after a count of them; each take runs the script's own source, so it decides
 * exactly as the take would alone, after the takes before it in the batch.
 */
function batchOf(script: Script): Script {
  const source = `local function take(KEYS, ARGV)
${script.source}
end
local replies, i, n = {}, 1, #ARGV
while i <= n do
  local count = tonumber(ARGV[i])
  replies[#replies + 1] = take(KEYS, {unpack(ARGV, i + 1, i + count)})
  i = i + count + 1
end
return replies
`
  return {
    name: `${script.name} (batch)`,
    sha: createHash('sha1').update(source).digest('hex'),
    source,
  }
}

/** One take waiting in a batch. */
interface Queued {
  /** The script's ARGV for this take. */
  readonly argv: readonly string[]
  readonly resolve: (reply: unknown) => void
  readonly reject: (error: unknown) => void
}

/** The takes of one script on one key queued in this tick. */
interface Group {
  readonly script: Script
  readonly key: string
  /** `performance.now()` of the first take: the batch's timeout counts from it. */
  readonly now: number
  readonly takes: Queued[]
}

const defer: (run: () => void) => void =
  typeof process === 'object' && typeof process.nextTick === 'function'
    ? (run) => process.nextTick(run)
    : queueMicrotask

/**
 * Sends the one-policy takes made in the same tick on the same Redis key as one script
 * call: a hot key under concurrent requests costs Redis one EVALSHA per batch instead of
 * one per decision, and one reply to parse. A take alone in its tick is sent as it is.
 * The batch is sent once the tick's microtasks have run (every request that a reply
 * just let go has made its next take by then), so nothing waits for a timer. Grouping
 * by key keeps every call on one key: a Cluster routes it as the take alone, and a
 * slot being migrated answers it with ASK, never TRYAGAIN.
 *
 * @example
 * ```ts
 * const batch = new TakeBatch(runner)
 * const reply = await batch.script(FIXED_WINDOW, singleArgs(plan, key, '', 1), key, performance.now())
 * ```
 */
export class TakeBatch {
  readonly #runner: ScriptRunner
  readonly #batches = new Map<string, Script>()
  #groups = new Map<string, Group>()
  #scheduled = false

  constructor(runner: ScriptRunner) {
    this.#runner = runner
  }

  /**
   * Runs `script` with `args` as EVALSHA takes them (`['EVALSHA', sha, '1', key, ...argv]`),
   * with the other takes of this tick on `key`; answers what the script answers for this
   * take, or rejects with what the call failed with.
   */
  script(script: Script, args: string[], key: string, now: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const id = `${script.sha}\u0000${key}`
      let group = this.#groups.get(id)
      if (group === undefined) {
        group = { script, key, now, takes: [] }
        this.#groups.set(id, group)
      }
      group.takes.push({ argv: args.slice(4), resolve, reject })
      if (!this.#scheduled) {
        this.#scheduled = true
        defer(this.#flush)
      }
    })
  }

  #flush = (): void => {
    this.#scheduled = false
    const groups = this.#groups
    this.#groups = new Map()
    for (const group of groups.values()) {
      for (let from = 0; from < group.takes.length; from += MAX_BATCH) {
        this.#send(group, group.takes.slice(from, from + MAX_BATCH))
      }
    }
  }

  #send(group: Group, takes: readonly Queued[]): void {
    const { script, key, now } = group
    if (takes.length === 1) {
      const take = takes[0]!
      const args = ['EVALSHA', script.sha, '1', key, ...take.argv]
      this.#runner.script(script, args, key, now).then(take.resolve, take.reject)
      return
    }
    let batch = this.#batches.get(script.sha)
    if (batch === undefined) {
      batch = batchOf(script)
      this.#batches.set(script.sha, batch)
    }
    const args = ['EVALSHA', batch.sha, '1', key]
    for (const take of takes) args.push(String(take.argv.length), ...take.argv)
    this.#runner.script(batch, args, key, now).then(
      (replies) => {
        if (!Array.isArray(replies) || replies.length !== takes.length) {
          const error = new Error('redisStore: unexpected reply to a batch of takes')
          for (const take of takes) take.reject(error)
          return
        }
        for (let i = 0; i < takes.length; i++) takes[i]!.resolve(replies[i])
      },
      (error: unknown) => {
        for (const take of takes) take.reject(error)
      },
    )
  }
}
