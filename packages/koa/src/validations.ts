import { emitWarning, enabledChecks, type ValidateOption as Switches } from '@sluice/http/adapter'
import type { Context } from 'koa'

/** Stable codes of the one-time configuration warnings (the same as in `@sluice/express`). */
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
export type ValidateOption = Switches<'xForwardedFor' | 'trustProxy'>

/**
 * Legal but suspicious proxy setups, each checked until it has been seen once and
 * reported as a `SluiceWarning` with a stable code, never thrown.
 */
export class Validations {
  readonly #pending: Set<'xForwardedFor' | 'trustProxy'>
  readonly #factory: string
  /** `app.proxyIpHeader` and its lower case, so a request does not lower-case it again. */
  #ipHeader = ''
  #ipHeaderLower = ''

  constructor(factory: string, option: ValidateOption | undefined) {
    this.#factory = factory
    this.#pending = enabledChecks(factory, option, ['xForwardedFor', 'trustProxy'])
  }

  #lower(header: string): string {
    if (header !== this.#ipHeader) {
      this.#ipHeader = header
      this.#ipHeaderLower = header.toLowerCase()
    }
    return this.#ipHeaderLower
  }

  /** Runs the checks still pending against one request. */
  check(ctx: Context): void {
    if (this.#pending.size === 0) return
    const { app } = ctx
    if (this.#pending.delete('trustProxy') && app.proxy && !(app.maxIpsCount > 0)) {
      emitWarning(
        this.#factory,
        'ERR_SLUICE_PERMISSIVE_TRUST_PROXY',
        `Koa's \`app.proxy\` is on with \`app.maxIpsCount\` 0, so ctx.ip is the leftmost ${app.proxyIpHeader} address, which any client can set: every request can pick its own rate-limit key. Set \`app.maxIpsCount\` to the number of proxies in front of the app.`,
      )
    }
    if (
      this.#pending.has('xForwardedFor') &&
      ctx.req.headers[this.#lower(app.proxyIpHeader)] !== undefined
    ) {
      this.#pending.delete('xForwardedFor')
      if (!app.proxy) {
        emitWarning(
          this.#factory,
          'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY',
          `An ${app.proxyIpHeader} header arrived while Koa's \`app.proxy\` is off: if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Set \`app.proxy = true\` and \`app.maxIpsCount\` to the number of proxies; the header is ignored until then.`,
        )
      }
    }
  }
}
