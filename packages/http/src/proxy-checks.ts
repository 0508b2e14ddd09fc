import { emitWarning } from '@sluice/keyed/store'
import { enabledChecks, type ValidateOption } from './validate'

/** The one-time proxy checks an adapter on a proxy-aware framework runs. */
export type ProxyCheck = 'xForwardedFor' | 'trustProxy' | 'proxyHeader'

/** What a framework says of one request's proxy setup. */
export interface ProxyView {
  /** The framework trusts a proxy (Express `trust proxy`, Koa `app.proxy`). */
  readonly trusted: boolean
  /** It trusts every hop, so the client-written leftmost address wins. */
  readonly permissive: boolean
  /** The request carries the proxy header (`X-Forwarded-For`, or Koa's `proxyIpHeader`). */
  readonly forwarded: boolean
}

/** The framework's own words for the three warnings, naming its settings. */
export interface ProxyTexts {
  readonly permissive: string
  readonly untrusted: string
  readonly noProxy: (watched: number) => string
}

/** Requests watched for a proxy header before `proxyHeader` concludes there is no proxy. */
export const WATCHED_REQUESTS = 100

/**
 * Legal but suspicious proxy setups, each checked until it has been seen once and reported
 * as a `SluiceWarning` with a stable code, never thrown: a misconfigured proxy must not
 * take the service down. `trustProxy`: every hop is trusted; `xForwardedFor`: a proxy
 * header arrived while proxies are not trusted; `proxyHeader`: proxies are trusted but the
 * first {@link WATCHED_REQUESTS} requests carried no proxy header. An adapter calls
 * `check` while `pending` is true, so a quiet middleware pays one field read per request.
 *
 * @example
 * ```ts
 * const checks = new ProxyChecks('rateLimit', options.validate, texts)
 * if (checks.pending) checks.check(viewOf(req))
 * ```
 */
export class ProxyChecks {
  readonly #pending: Set<ProxyCheck>
  readonly #factory: string
  readonly #texts: ProxyTexts
  #watched = 0

  constructor(factory: string, option: ValidateOption | undefined, texts: ProxyTexts) {
    this.#factory = factory
    this.#texts = texts
    this.#pending = enabledChecks(factory, option, ['xForwardedFor', 'trustProxy', 'proxyHeader'])
  }

  /** Whether any check is still to run. */
  get pending(): boolean {
    return this.#pending.size !== 0
  }

  /** Runs the checks still pending against one request's proxy view. */
  check({ trusted, permissive, forwarded }: ProxyView): void {
    const pending = this.#pending
    if (pending.delete('trustProxy') && permissive) {
      emitWarning(this.#factory, 'ERR_SLUICE_PERMISSIVE_TRUST_PROXY', this.#texts.permissive)
    }
    if (pending.has('proxyHeader')) {
      if (forwarded || !trusted) pending.delete('proxyHeader')
      else if (++this.#watched >= WATCHED_REQUESTS) {
        pending.delete('proxyHeader')
        emitWarning(
          this.#factory,
          'ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY',
          this.#texts.noProxy(WATCHED_REQUESTS),
        )
      }
    }
    if (forwarded && pending.delete('xForwardedFor') && !trusted) {
      emitWarning(this.#factory, 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY', this.#texts.untrusted)
    }
  }
}
