import { emitWarning, enabledChecks, type ValidateOption as Switches } from '@sluice/http/adapter'
import type { Context } from 'koa'

/** Stable codes of the one-time configuration warnings (the same as in `@sluice/express`). */
export type ValidationCode =
  | 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'
  | 'ERR_SLUICE_PERMISSIVE_TRUST_PROXY'
  | 'ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY'

/**
 * Which one-time checks run on the first requests (all by default). `false` turns them
 * all off; an object turns single ones off.
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
 * Legal but suspicious proxy setups, each checked until it has been seen once and
 * reported as a `SluiceWarning` with a stable code, never thrown.
 */
export class Validations {
  readonly #pending: Set<Check>
  readonly #factory: string
  #watched = 0
  /** `app.proxyIpHeader` lower-cased, kept until the app changes it. */
  #header = ''
  #lower = ''

  constructor(factory: string, option: ValidateOption | undefined) {
    this.#factory = factory
    this.#pending = enabledChecks(factory, option, ['xForwardedFor', 'trustProxy', 'proxyHeader'])
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
    if (app.proxyIpHeader !== this.#header) {
      this.#header = app.proxyIpHeader
      this.#lower = app.proxyIpHeader.toLowerCase()
    }
    const forwarded = ctx.req.headers[this.#lower] !== undefined
    if (this.#pending.has('proxyHeader')) {
      if (forwarded || !app.proxy) this.#pending.delete('proxyHeader')
      else if (++this.#watched >= WATCHED_REQUESTS) {
        this.#pending.delete('proxyHeader')
        emitWarning(
          this.#factory,
          'ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY',
          `Koa's \`app.proxy\` is on, but none of the first ${WATCHED_REQUESTS} requests carried ${app.proxyIpHeader}: if no proxy is in front of the app, any client can send that header and choose its own rate-limit key. Turn \`app.proxy\` off, or check that the proxy sets the header.`,
        )
      }
    }
    if (this.#pending.has('xForwardedFor') && forwarded) {
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
