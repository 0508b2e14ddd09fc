import { CallTimer } from './call-timer'
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
    return this.#run(args, key, undefined)
  }

  /**
   * Runs a script with `args` as EVALSHA takes them (`['EVALSHA', sha, numkeys, ...]`).
   * If Redis answers NOSCRIPT (a restart, a failover, `SCRIPT FLUSH`), the same call is
   * sent again as EVAL, which caches the script on the node that owns the key (SCRIPT LOAD
   * could reach another node). A call its caller has given up on is not sent again.
   */
  script(script: Script, args: string[], key: string): Promise<unknown> {
    return this.#run(args, key, script)
  }

  #run(args: string[], key: string | undefined, script: Script | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const pending = this.#timer.start(() => reject(timeoutError(this.#timer.ms)))
      const answered = (reply: unknown) => {
        if (pending.done) return
        pending.done = true
        resolve(reply)
      }
      const failed = (error: unknown) => {
        if (pending.done) return
        if (script !== undefined && args[0] === 'EVALSHA' && isNoScript(error)) {
          args[0] = 'EVAL'
          args[1] = script.source
          this.#sendNow(args, key).then(answered, failed)
          return
        }
        pending.done = true
        reject(toStoreError(error))
      }
      const connecting = this.#connection.connecting()
      if (connecting === undefined) {
        this.#sendNow(args, key).then(answered, failed)
      } else {
        connecting.then(() => {
          if (!pending.done) this.#sendNow(args, key).then(answered, failed)
        })
      }
    })
  }

  // A client that throws instead of rejecting, or answers without a promise, still
  // settles the call.
  #sendNow(args: string[], key: string | undefined): PromiseLike<unknown> {
    try {
      const reply = this.#send(args, key) as unknown
      return typeof (reply as PromiseLike<unknown> | undefined)?.then === 'function'
        ? (reply as PromiseLike<unknown>)
        : Promise.resolve(reply)
    } catch (error) {
      return Promise.reject(error)
    }
  }
}
