import { type ProxyCheck, ProxyChecks, type ValidateOption as Switches } from '@sluice/http/adapter'
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
export type ValidateOption = Switches<ProxyCheck>

/** Koa's proxy checks: how it reads `app.proxy`, `app.maxIpsCount` and `app.proxyIpHeader`. */
export class Validations {
  readonly #checks: ProxyChecks
  /** `app.proxyIpHeader` lower-cased, kept until the app changes it. */
  #header = ''
  #lower = ''

  constructor(factory: string, option: ValidateOption | undefined) {
    this.#checks = new ProxyChecks(factory, option, {
      permissive:
        "Koa's `app.proxy` is on with `app.maxIpsCount` 0, so ctx.ip is the leftmost proxy-header address, which any client can set: every request can pick its own rate-limit key. Set `app.maxIpsCount` to the number of proxies in front of the app.",
      untrusted:
        "A proxy header (app.proxyIpHeader) arrived while Koa's `app.proxy` is off: if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Set `app.proxy = true` and `app.maxIpsCount` to the number of proxies; the header is ignored until then.",
      noProxy: (watched) =>
        `Koa's \`app.proxy\` is on, but none of the first ${watched} requests carried the proxy header (app.proxyIpHeader): if no proxy is in front of the app, any client can send that header and choose its own rate-limit key. Turn \`app.proxy\` off, or check that the proxy sets the header.`,
    })
  }

  /** Runs the checks still pending against one request. */
  check(ctx: Context): void {
    if (!this.#checks.pending) return
    const { app } = ctx
    if (app.proxyIpHeader !== this.#header) {
      this.#header = app.proxyIpHeader
      this.#lower = app.proxyIpHeader.toLowerCase()
    }
    this.#checks.check({
      trusted: app.proxy,
      permissive: app.proxy && !(app.maxIpsCount > 0),
      forwarded: ctx.req.headers[this.#lower] !== undefined,
    })
  }
}
