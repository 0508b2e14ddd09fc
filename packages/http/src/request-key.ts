import { describe } from '@sluice/core/validation'
import { emitWarning, storedKey } from '@sluice/keyed/store'
import { FALLBACK_KEY } from './keys'

/** How many requests the shape of a custom key is checked on before the checks stop. */
const CHECKED_REQUESTS = 1000

const IPV6 = /^[0-9a-f]*:[0-9a-f:.]*$/i
// An IPv4 address (IPv4-mapped IPv6 included, as Node reports IPv4 clients of a dual-stack
// server) or a bracketed IPv6 address, then a port.
const WITH_PORT = /^(?:(?:::ffff:)?\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:.]+\]):\d+$/i

/**
 * Turns what a key extractor returned into the key a store sees, once per request: empty
 * or missing keys share {@link FALLBACK_KEY} (never a bypass), long keys are hashed, and
 * anything but a string is refused. A custom extractor's keys are watched for the usual
 * mistakes (a raw IPv6 address, an address with its port), each reported once.
 */
export class KeyNormalizer {
  readonly #factory: string
  /** Whether the extractor is the user's own (the built-in ones get these right). */
  readonly #custom: boolean
  #fallbackWarned = false
  #checks = CHECKED_REQUESTS

  constructor(factory: string, custom: boolean) {
    this.#factory = factory
    this.#custom = custom
  }

  normalize(raw: unknown): string {
    if (raw === undefined || raw === '') {
      // A missing address under the built-in keys.ip() is the adapter's to report: it
      // knows why (no socket, no getIp on this runtime).
      if (this.#custom && !this.#fallbackWarned) {
        this.#fallbackWarned = true
        emitWarning(
          this.#factory,
          'ERR_SLUICE_FALLBACK_KEY',
          `a request had no key, so it was counted under the shared key "${FALLBACK_KEY}" with every other such request: one client can use up their common budget. Return a key for every request (for example keys.first(yourKey, keys.ip())).`,
        )
      }
      return FALLBACK_KEY
    }
    if (typeof raw !== 'string') {
      throw new TypeError(
        `${this.#factory}: "key" must return a string or undefined, got ${describe(raw)}`,
      )
    }
    if (this.#custom && this.#checks > 0) this.#check(raw)
    return storedKey(raw)
  }

  #check(key: string): void {
    this.#checks--
    if (WITH_PORT.test(key)) {
      this.#checks = 0
      emitWarning(
        this.#factory,
        'ERR_SLUICE_KEY_WITH_PORT',
        `a custom key looks like an address with its port (${describe(key)}): each connection of one client gets its own budget. Use keys.ip(), or drop the port.`,
      )
    } else if (IPV6.test(key)) {
      this.#checks = 0
      emitWarning(
        this.#factory,
        'ERR_SLUICE_KEY_RAW_IPV6',
        `a custom key is a raw IPv6 address (${describe(key)}): one subscriber holds a whole /56 or /48 and can rotate through it for fresh budgets. Use keys.ip() (it groups IPv6 by /56), e.g. keys.first(keys.header('x-api-key'), keys.ip()).`,
      )
    }
  }
}
