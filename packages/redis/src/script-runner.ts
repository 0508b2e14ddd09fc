import { CallTimer, type Pending } from './call-timer'
import type { SendCommand } from './client'
import type { Connection } from './connection'
import { isNoScript, timeoutError, toStoreError } from './errors'
import type { Script } from './scripts'

/**
 * Sends the store's commands and scripts, each bounded by `timeout`: a call still
 * unanswered then rejects with `ERR_SLUICE_REDIS_TIMEOUT`, any other failure with
 * `ERR_SLUICE_REDIS` wrapping the client's error. A call made while the client is still
 * connecting waits for the connection first, within the same timeout.
 */
export class ScriptRunner {
  readonly #send: SendCommand
  readonly #timer: CallTimer
  readonly #connection: Connection
  /** The SHAs of the scripts an EVAL is on its way for, after a NOSCRIPT (see {@link Call}). */
  readonly #loads = new Set<string>()

  constructor(send: SendCommand, timeoutMs: number, connection: Connection) {
    this.#send = send
    this.#timer = new CallTimer(timeoutMs)
    this.#connection = connection
  }

  get timeoutMs(): number {
    return this.#timer.ms
  }

  /** Sends one command (`key` routes it on a cluster). */
  call(args: string[], key: string | undefined): Promise<unknown> {
    return this.#run(args, key, undefined, performance.now())
  }

  /**
   * Runs a script with `args` as EVALSHA takes them (`['EVALSHA', sha, numkeys, ...]`),
   * started at `now` (`performance.now()`). If Redis answers NOSCRIPT (a restart, a
   * failover, `SCRIPT FLUSH`), the same call is sent again as EVAL, which caches the
   * script on the node that owns the key (SCRIPT LOAD could reach another node). Calls
   * that meet NOSCRIPT while such an EVAL is on its way send EVALSHA again, behind it on
   * the connection (and EVAL only if that fails too, on another node of a Cluster): a
   * burst after a restart sends the source once, not once per call. A call its caller
   * has given up on is not sent again.
   */
  script(script: Script, args: string[], key: string, now: number): Promise<unknown> {
    return this.#run(args, key, script, now)
  }

  #run(
    args: string[],
    key: string | undefined,
    script: Script | undefined,
    now: number,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const call = new Call(
        this.#send,
        this.#timer,
        this.#loads,
        args,
        key,
        script,
        resolve,
        reject,
        now,
      )
      const connecting = this.#connection.connecting()
      if (connecting === undefined) void call.send()
      else
        connecting.then(() => {
          if (!call.done) void call.send()
        })
    })
  }
}

/** One call in flight. A class, so that its handlers are made once, not per call. */
class Call implements Pending {
  readonly deadline: number
  done = false
  readonly #send: SendCommand
  readonly #timer: CallTimer
  readonly #loads: Set<string>
  readonly #args: string[]
  readonly #key: string | undefined
  readonly #script: Script | undefined
  readonly #resolve: (reply: unknown) => void
  readonly #reject: (error: unknown) => void
  /** Set once this call followed another's EVAL: its next NOSCRIPT sends the source. */
  #waited = false

  constructor(
    send: SendCommand,
    timer: CallTimer,
    loads: Set<string>,
    args: string[],
    key: string | undefined,
    script: Script | undefined,
    resolve: (reply: unknown) => void,
    reject: (error: unknown) => void,
    now: number,
  ) {
    this.#send = send
    this.#timer = timer
    this.#loads = loads
    this.#args = args
    this.#key = key
    this.#script = script
    this.#resolve = resolve
    this.#reject = reject
    this.deadline = now + timer.ms
    timer.watch(this)
  }

  onTimeout(): void {
    this.#reject(timeoutError(this.#timer.ms))
  }

  /** Sends the call; settles once its answer (or failure) has been handled. */
  send(): Promise<void> {
    let reply: PromiseLike<unknown>
    // A client that throws instead of rejecting, or answers without a promise, still
    // settles the call.
    try {
      const sent = this.#send(this.#args, this.#key) as unknown
      reply =
        typeof (sent as PromiseLike<unknown> | undefined)?.then === 'function'
          ? (sent as PromiseLike<unknown>)
          : Promise.resolve(sent)
    } catch (error) {
      reply = Promise.reject(error)
    }
    return Promise.resolve(reply).then(
      (value) => {
        if (this.#timer.settle(this)) this.#resolve(value)
      },
      (error) => this.#failed(error),
    )
  }

  #failed(error: unknown): void {
    if (this.done) return
    const args = this.#args
    const script = this.#script
    if (script !== undefined && args[0] === 'EVALSHA' && isNoScript(error)) {
      if (this.#loads.has(script.sha) && !this.#waited) {
        this.#waited = true
        void this.send()
        return
      }
      args[0] = 'EVAL'
      args[1] = script.source
      this.#loads.add(script.sha)
      void this.send().then(() => this.#loads.delete(script.sha))
      return
    }
    if (this.#timer.settle(this)) this.#reject(toStoreError(error))
  }
}
