import type { Request } from 'express'

/** Stable codes of the one-time configuration warnings. */
export type ValidationCode =
  | 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'
  | 'ERR_SLUICE_PERMISSIVE_TRUST_PROXY'

/**
 * Which one-time checks run on the first requests (all by default). `false` turns them
 * all off; an object turns single ones off.
 *
 * @example
 * ```ts
 * rateLimit({ limit: 100, validate: { xForwardedFor: false } })
 * ```
 */
export type ValidateOption =
  | boolean
  | {
      /** Warn when `X-Forwarded-For` arrives while `trust proxy` is off. */
      xForwardedFor?: boolean
      /** Warn when `trust proxy` is `true` (every client can choose its address). */
      trustProxy?: boolean
    }

/**
 * Legal but suspicious setups, each checked until it has been seen once and reported
 * with `process.emitWarning` (type `SluiceWarning`, a stable `code`), never thrown: a
 * misconfigured proxy setting must not take the service down.
 */
export class Validations {
  #xForwardedFor: boolean
  #trustProxy: boolean
  readonly #factory: string

  constructor(factory: string, option: ValidateOption | undefined) {
    this.#factory = factory
    if (option === undefined || typeof option === 'boolean') {
      this.#xForwardedFor = option !== false
      this.#trustProxy = option !== false
    } else if (typeof option === 'object' && option !== null) {
      this.#xForwardedFor = option.xForwardedFor !== false
      this.#trustProxy = option.trustProxy !== false
    } else {
      throw new TypeError(
        `${factory}: "validate" must be a boolean or an object, got ${JSON.stringify(option)}`,
      )
    }
  }

  /** Runs the checks still pending against one request. */
  check(req: Request): void {
    if (this.#trustProxy) {
      this.#trustProxy = false
      if (req.app.get('trust proxy') === true) {
        this.#warn(
          'ERR_SLUICE_PERMISSIVE_TRUST_PROXY',
          "Express's `trust proxy` is true, so req.ip is the leftmost X-Forwarded-For address, which any client can set: every request can pick its own rate-limit key. Set `trust proxy` to the number of proxies in front of the app, or to their addresses.",
        )
      }
    }
    if (this.#xForwardedFor && req.headers['x-forwarded-for'] !== undefined) {
      this.#xForwardedFor = false
      if (!req.app.get('trust proxy')) {
        this.#warn(
          'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY',
          "An X-Forwarded-For header arrived while Express's `trust proxy` is off: if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Set `trust proxy` (e.g. app.set('trust proxy', 1)); the header is ignored until then.",
        )
      }
    }
  }

  #warn(code: ValidationCode, message: string): void {
    process.emitWarning(`${this.#factory}: ${message}`, { type: 'SluiceWarning', code })
  }
}
