import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/**
 * Node flags of every child: TypeScript through tsx, workspace packages resolved to their
 * source (the `@sluice/source` condition, as in the tests), `gc()` for heap measurements.
 */
export function childExecArgv(extra: readonly string[] = []): string[] {
  return [
    '--conditions=@sluice/source',
    '--import',
    import.meta.resolve('tsx'),
    '--expose-gc',
    ...extra,
  ]
}

/** A message between the orchestrator and a child: a `type` and anything else. */
export interface Message {
  readonly type: string
  readonly [field: string]: unknown
}

/**
 * A benchmark child process spoken to over IPC, one request at a time. Every measurement
 * runs in a child of its own so that contenders share neither JIT feedback (a call site
 * that saw five limiter classes is slower than one that saw one) nor a heap (one
 * contender's million keys would slow the garbage collection of the next).
 *
 * @example
 * ```ts
 * const child = await Child.start('decision-worker.ts', [JSON.stringify(job)], 'ready')
 * const sample = await child.request({ type: 'measure', ms: 100 }, 'sample')
 * child.close()
 * ```
 */
export class Child {
  readonly process: ChildProcess
  readonly ready: Message
  #pending: { type: string; resolve(m: Message): void; reject(e: Error): void } | undefined
  #exit: Error | undefined

  private constructor(process: ChildProcess, ready: Message) {
    this.process = process
    this.ready = ready
    process.on('message', (message: Message) => this.#receive(message))
    // A send to a child that has just exited fails; its 'exit' event reports that.
    process.on('error', () => {})
  }

  /**
   * Forks `entry` (a file in this folder) and waits for its first message of type
   * `readyType`; rejects if the child fails, exits or stays silent for `timeoutMs`.
   */
  static start(
    entry: string,
    args: readonly string[],
    readyType: string,
    options: { execArgv?: readonly string[]; timeoutMs?: number } = {},
  ): Promise<Child> {
    const path = fileURLToPath(new URL(entry, import.meta.url))
    const child = fork(path, [...args], {
      execArgv: childExecArgv(options.execArgv),
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    })
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000)
    })
    return new Promise<Child>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill()
        reject(new Error(`${entry} ${args.join(' ')}: no "${readyType}" within time\n${stderr}`))
      }, options.timeoutMs ?? 120_000)
      const onExit = (code: number | null) => {
        clearTimeout(timer)
        reject(
          new Error(`${entry} ${args.join(' ')} exited (${code}) before "${readyType}"\n${stderr}`),
        )
      }
      child.once('exit', onExit)
      const onMessage = (message: Message) => {
        if (message.type === 'error') {
          clearTimeout(timer)
          child.off('exit', onExit)
          child.kill()
          reject(new Error(`${entry} ${args.join(' ')}: ${String(message.message)}`))
          return
        }
        if (message.type !== readyType) return
        clearTimeout(timer)
        child.off('exit', onExit)
        child.off('message', onMessage)
        const started = new Child(child, message)
        child.once('exit', (code) => started.#exited(code, stderr))
        resolve(started)
      }
      child.on('message', onMessage)
    })
  }

  /** Sends `message` and waits for the reply of type `replyType`. */
  request(message: Message, replyType: string): Promise<Message> {
    if (this.#exit !== undefined) return Promise.reject(this.#exit)
    if (this.#pending !== undefined) throw new Error('Child: one request at a time')
    return new Promise<Message>((resolve, reject) => {
      this.#pending = { type: replyType, resolve, reject }
      this.process.send(message)
    })
  }

  /** Asks the child to exit, and kills it if it has not within a second. */
  async close(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return
    const exited = new Promise<void>((resolve) => this.process.once('exit', () => resolve()))
    // The child may be exiting on its own: a failed send is then no news.
    if (this.process.connected) this.process.send({ type: 'exit' }, () => {})
    const timer = setTimeout(() => this.process.kill('SIGKILL'), 1000)
    await exited
    clearTimeout(timer)
  }

  #receive(message: Message): void {
    const pending = this.#pending
    if (pending === undefined) return
    if (message.type === 'error') {
      this.#pending = undefined
      pending.reject(new Error(String(message.message)))
    } else if (message.type === pending.type) {
      this.#pending = undefined
      pending.resolve(message)
    }
  }

  #exited(code: number | null, stderr: string): void {
    this.#exit = new Error(`child exited (${code})\n${stderr}`)
    this.#pending?.reject(this.#exit)
    this.#pending = undefined
  }
}

/**
 * The child side: answers each request with `handler`'s reply, reports failures as
 * `{ type: 'error' }`, and exits when asked to or when the parent goes away.
 *
 * @example
 * ```ts
 * serve(async (message) => ({ type: 'sample', ns: await measureOnce() }))
 * ```
 */
export function serve(handler: (message: Message) => Promise<Message>): void {
  process.on('message', (message: Message) => {
    if (message.type === 'exit') {
      process.exit(0)
    }
    handler(message).then(
      (reply) => process.send?.(reply),
      (error: unknown) => process.send?.({ type: 'error', message: errorText(error) }),
    )
  })
  process.on('disconnect', () => process.exit(0))
}

/** An error's message and stack, or the thrown value as text. */
export function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error)
}
