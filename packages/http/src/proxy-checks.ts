import { emitWarning } from '@sluice/keyed/store'
import type { ProxyCheckName, ProxySetup, ProxyTexts, ProxyView } from './accessors'
import { enabledChecks } from './validate'

/** Requests watched for a proxy header before `proxyHeader` concludes there is no proxy. */
export const WATCHED_REQUESTS = 100

const PROXY_CHECKS: readonly ProxyCheckName[] = ['xForwardedFor', 'trustProxy', 'proxyHeader']

/**
 * Legal but suspicious proxy setups, each checked until it has been seen once and reported
 * as a `SluiceWarning` with a stable code, never thrown: a misconfigured proxy must not
 * take the service down. `trustProxy`: every hop is trusted; `xForwardedFor`: a proxy
 * header arrived while proxies are not trusted; `proxyHeader`: proxies are trusted but the
 * first {@link WATCHED_REQUESTS} requests carried no proxy header; `clientAddress`: the
 * framework found no client address.
 *
 * The framework's proxy setting is its server's and taken as fixed: the first request
 * settles the checks it rules out (with proxies trusted no `xForwardedFor`, without them
 * no `proxyHeader`). The engine calls `check` while the `pending` field is true, so a
 * middleware pays one field read per request once nothing more can be reported, and a
 * look at the proxy header until then.
 */
export class ProxyChecks<Req> {
  /** Whether a check of a request's proxy setup is still to run (`check`). */
  pending: boolean
  /** Whether the framework's client address is watched (`clientAddress`). */
  readonly watchesAddress: boolean
  readonly #checks: Set<ProxyCheckName>
  readonly #factory: string
  readonly #texts: Partial<ProxyTexts>
  readonly #view: ((req: Req) => ProxyView) | undefined
  #watched = 0
  #addressReported = false

  constructor(factory: string, option: unknown, setup: ProxySetup<Req> | undefined) {
    this.#factory = factory
    this.#texts = setup?.texts ?? {}
    this.#view = setup?.view
    const enabled = enabledChecks(factory, option, setup?.checks ?? (setup ? PROXY_CHECKS : []))
    // Each check runs only where the framework gave its words (and, but for the address,
    // its view of a request).
    this.watchesAddress = enabled.delete('clientAddress') && this.#texts.noAddress !== undefined
    for (const check of enabled) if (!this.#runs(check)) enabled.delete(check)
    this.#checks = enabled
    this.pending = enabled.size !== 0
  }

  #runs(check: ProxyCheckName): boolean {
    const texts = this.#texts
    if (this.#view === undefined) return false
    if (check === 'trustProxy') return texts.permissive !== undefined
    return check === 'xForwardedFor' ? texts.untrusted !== undefined : texts.noProxy !== undefined
  }

  /** Runs the checks still pending against one request's proxy setup. */
  check(req: Req): void {
    const { trusted, permissive, forwarded } = this.#view!(req)
    const checks = this.#checks
    const texts = this.#texts
    if (checks.delete('trustProxy') && permissive) {
      emitWarning(this.#factory, 'ERR_SLUICE_PERMISSIVE_TRUST_PROXY', texts.permissive!)
    }
    if (checks.has('proxyHeader')) {
      if (forwarded || !trusted) checks.delete('proxyHeader')
      else if (++this.#watched >= WATCHED_REQUESTS) {
        checks.delete('proxyHeader')
        emitWarning(
          this.#factory,
          'ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY',
          texts.noProxy!(WATCHED_REQUESTS),
        )
      }
    }
    // With proxies trusted a proxy header is expected: nothing left to report.
    if ((forwarded || trusted) && checks.delete('xForwardedFor') && !trusted) {
      emitWarning(this.#factory, 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY', texts.untrusted!)
    }
    this.pending = checks.size !== 0
  }

  /** Reports, once, that the framework found no client address. */
  noAddress(): void {
    if (this.#addressReported) return
    this.#addressReported = true
    emitWarning(this.#factory, 'ERR_SLUICE_NO_CLIENT_ADDRESS', this.#texts.noAddress!)
  }
}
