import { type ProxyCheck, ProxyChecks, type ValidateOption as Switches } from '@sluice/http/adapter'
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
export type ValidateOption = Switches<ProxyCheck>

const TEXTS = {
  permissive:
    "Express's `trust proxy` is true, so req.ip is the leftmost X-Forwarded-For address, which any client can set: every request can pick its own rate-limit key. Set `trust proxy` to the number of proxies in front of the app, or to their addresses.",
  untrusted:
    "An X-Forwarded-For header arrived while Express's `trust proxy` is off: if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Set `trust proxy` (e.g. app.set('trust proxy', 1)); the header is ignored until then.",
  noProxy: (watched: number) =>
    `Express's \`trust proxy\` is on, but none of the first ${watched} requests carried X-Forwarded-For: if no proxy is in front of the app, any client can send that header and choose its own rate-limit key. Turn \`trust proxy\` off, or check that the proxy sets the header.`,
}

/** Express's proxy checks: how it reads `trust proxy` and `X-Forwarded-For`. */
export class Validations {
  readonly #checks: ProxyChecks

  constructor(factory: string, option: ValidateOption | undefined) {
    this.#checks = new ProxyChecks(factory, option, TEXTS)
  }

  /** Runs the checks still pending against one request. */
  check(req: Request): void {
    if (!this.#checks.pending) return
    const setting: unknown = req.app.get('trust proxy')
    this.#checks.check({
      trusted: Boolean(setting),
      permissive: setting === true,
      forwarded: req.headers['x-forwarded-for'] !== undefined,
    })
  }
}
