/**
 * `node:http`'s client as the shared scenarios use it (`request`, the response's status,
 * raw headers and body, `destroy()`), on `fetch`, for the scenarios inside workerd: its own
 * `node:http` client leaves `rawHeaders` empty. Requests go out through miniflare's real
 * socket and come back into the same Worker, where the `x-sluice-app` header picks the app
 * (each app gets a port number of its own, but all share the Worker's one socket).
 */

/** Which app of the Worker a request is for: the `port` the harness gave it. */
export const APP_HEADER = 'x-sluice-app'

let origin = ''

/** Where the Worker's socket listens: the origin of the request that runs the scenarios. */
export function setOrigin(url: string): void {
  origin = url
}

type Listener = (...args: never[]) => void

class Emitter {
  readonly #listeners = new Map<string, Listener[]>()

  on(event: string, listener: Listener): this {
    this.#listeners.set(event, [...(this.#listeners.get(event) ?? []), listener])
    return this
  }

  once(event: string, listener: Listener): this {
    const once = ((...args: never[]) => {
      this.off(event, once)
      listener(...args)
    }) as Listener
    return this.on(event, once)
  }

  off(event: string, listener: Listener): this {
    this.#listeners.set(
      event,
      (this.#listeners.get(event) ?? []).filter((l) => l !== listener),
    )
    return this
  }

  emit(event: string, ...args: unknown[]): void {
    for (const listener of this.#listeners.get(event) ?? [])
      (listener as (...a: unknown[]) => void)(...args)
  }
}

class IncomingMessage extends Emitter {
  readonly statusCode: number
  readonly rawHeaders: string[] = []
  #decoder: InstanceType<typeof TextDecoder> | undefined

  constructor(response: Response) {
    super()
    this.statusCode = response.status
    for (const [name, value] of response.headers) {
      // Fetch joins repeated headers; Set-Cookie is the one kept apart.
      if (name === 'set-cookie') {
        for (const cookie of response.headers.getSetCookie()) this.rawHeaders.push(name, cookie)
      } else {
        this.rawHeaders.push(name, value)
      }
    }
  }

  setEncoding(_encoding: 'utf8'): void {
    this.#decoder = new TextDecoder()
  }

  async read(body: ReadableStream<Uint8Array> | null): Promise<void> {
    try {
      if (body !== null) {
        for await (const chunk of body) {
          this.emit(
            'data',
            this.#decoder === undefined ? chunk : this.#decoder.decode(chunk, { stream: true }),
          )
        }
      }
      this.emit('end')
    } catch (error) {
      this.emit('error', error)
    }
  }
}

interface RequestOptions {
  host?: string
  port?: number
  path?: string
  method?: string
  headers?: Record<string, string> | undefined
}

class ClientRequest extends Emitter {
  readonly #abort = new AbortController()
  readonly #options: RequestOptions

  constructor(options: RequestOptions, onResponse?: (res: IncomingMessage) => void) {
    super()
    this.#options = options
    if (onResponse !== undefined) this.on('response', onResponse as Listener)
  }

  end(): void {
    const { path = '/', method = 'GET', headers = {}, port } = this.#options
    fetch(new URL(path, origin), {
      method,
      headers: { ...headers, [APP_HEADER]: String(port) },
      signal: this.#abort.signal,
    }).then(
      (response) => {
        const res = new IncomingMessage(response)
        this.emit('response', res)
        void res.read(response.body)
      },
      (error: unknown) => this.emit('error', error),
    )
  }

  /** Drops the request: the connection closes, as when a client goes away. */
  destroy(): void {
    this.#abort.abort(new Error('socket hang up'))
  }
}

export function request(
  options: RequestOptions,
  onResponse?: (res: IncomingMessage) => void,
): ClientRequest {
  return new ClientRequest(options, onResponse)
}

export type { IncomingMessage }
export default { request }
