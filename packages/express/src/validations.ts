import { emitWarning, enabledChecks, type ValidateOption as Switches } from '@sluice/http/adapter'
import type { Request } from 'express'

/** Stable codes of the one-time configuration warnings. */
export type ValidationCode =
  | 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'
  | 'ERR_SLUICE_PERMISSIVE_TRUST_PROXY'
  | 'ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY'

/**
 * Which one-time checks run on the first requests (all by default). `false` turns them
 * all off; an object turns single ones off: `xForwardedFor` (warn when `X-Forwarded-For`
 * arrives while `trust proxy` is off), `trustProxy` (warn when `trust proxy` is `true`),
 * `proxyHeader` (warn when `trust proxy` is on but the first 100 requests carried no
 * `X-Forwarded-For`: with no proxy in front, any client can send one and pick its key).
 *
 * @example
 * ```ts
 * rateLimit({ limit: 100, validate: { xForwardedFor: false } })
 * ```
 */
export type ValidateOption = Switches<Check>

type Check = 'xForwardedFor' | 'trustProxy' | 'proxyHeader'

/** Requests watched for a proxy header before `proxyHeader` concludes there is no proxy. */
const WATCHED_REQUESTS = 100

/**
 * Legal but suspicious setups, each checked until it has been seen once and reported
 * as a `SluiceWarning` with a stable `code`, never thrown: a misconfigured proxy setting
 * must not take the service down.
 */
export class Validations {
  readonly #pending: Set<Check>
  readonly #factory: string
  #watched = 0

  constructor(factory: string, option: ValidateOption | undefined) {
    this.#factory = factory
    this.#pending = enabledChecks(factory, option, ['xForwardedFor', 'trustProxy', 'proxyHeader'])
  }

  /** Runs the checks still pending against one request. */
  check(req: Request): void {
    if (this.#pending.size === 0) return
    if (this.#pending.delete('trustProxy') && req.app.get('trust proxy') === true) {
      emitWarning(
        this.#factory,
        'ERR_SLUICE_PERMISSIVE_TRUST_PROXY',
        "Express's `trust proxy` is true, so req.ip is the leftmost X-Forwarded-For address, which any client can set: every request can pick its own rate-limit key. Set `trust proxy` to the number of proxies in front of the app, or to their addresses.",
      )
    }
    const forwarded = req.headers['x-forwarded-for'] !== undefined
    if (this.#pending.has('proxyHeader')) {
      if (forwarded || !req.app.get('trust proxy')) this.#pending.delete('proxyHeader')
      else if (++this.#watched >= WATCHED_REQUESTS) {
        this.#pending.delete('proxyHeader')
        emitWarning(
          this.#factory,
          'ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY',
          `Express's \`trust proxy\` is on, but none of the first ${WATCHED_REQUESTS} requests carried X-Forwarded-For: if no proxy is in front of the app, any client can send that header and choose its own rate-limit key. Turn \`trust proxy\` off, or check that the proxy sets the header.`,
        )
      }
    }
    if (this.#pending.has('xForwardedFor') && forwarded) {
      this.#pending.delete('xForwardedFor')
      if (!req.app.get('trust proxy')) {
        emitWarning(
          this.#factory,
          'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY',
          "An X-Forwarded-For header arrived while Express's `trust proxy` is off: if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Set `trust proxy` (e.g. app.set('trust proxy', 1)); the header is ignored until then.",
        )
      }
    }
  }
}
