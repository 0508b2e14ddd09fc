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
 * framework found no client address. The engine calls `check` while `pending` is true, so
 * a quiet middleware pays one field read per request.
 */
export class ProxyChecks<Req> {
  readonly #pending: Set<ProxyCheckName>
  readonly #factory: string
  readonly #texts: Partial<ProxyTexts>
  readonly #view: ((req: Req) => ProxyView) | undefined
  #watched = 0

  constructor(factory: string, option: unknown, setup: ProxySetup<Req> | undefined) {
    this.#factory = factory
    this.#texts = setup?.texts ?? {}
    this.#view = setup?.view
    this.#pending = enabledChecks(factory, option, setup?.checks ?? (setup ? PROXY_CHECKS : []))
    // Each check runs only where the framework gave its words (and, but for the address,
    // its view of a request).
    for (const check of this.#pending) if (!this.#runs(check)) this.#pending.delete(check)
  }

  #runs(check: ProxyCheckName): boolean {
    const texts = this.#texts
    if (check === 'clientAddress') return texts.noAddress !== undefined
    if (this.#view === undefined) return false
    if (check === 'trustProxy') return texts.permissive !== undefined
    return check === 'xForwardedFor' ? texts.untrusted !== undefined : texts.noProxy !== undefined
  }

  /** Whether a check of a request's proxy setup is still to run. */
  get pending(): boolean {
    return this.#view !== undefined && this.#pending.size !== 0
  }

  /** Whether the framework's client address is watched (`clientAddress`). */
  get watchesAddress(): boolean {
    return this.#pending.has('clientAddress')
  }

  /** Runs the checks still pending against one request's proxy setup. */
  check(req: Req): void {
    const { trusted, permissive, forwarded } = this.#view!(req)
    const pending = this.#pending
    const texts = this.#texts
    if (pending.delete('trustProxy') && permissive) {
      emitWarning(this.#factory, 'ERR_SLUICE_PERMISSIVE_TRUST_PROXY', texts.permissive!)
    }
    if (pending.has('proxyHeader')) {
      if (forwarded || !trusted) pending.delete('proxyHeader')
      else if (++this.#watched >= WATCHED_REQUESTS) {
        pending.delete('proxyHeader')
        emitWarning(
          this.#factory,
          'ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY',
          texts.noProxy!(WATCHED_REQUESTS),
        )
      }
    }
    if (forwarded && pending.delete('xForwardedFor') && !trusted) {
      emitWarning(this.#factory, 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY', texts.untrusted!)
    }
  }

  /** Reports, once, that the framework found no client address. */
  noAddress(): void {
    if (this.#pending.delete('clientAddress')) {
      emitWarning(this.#factory, 'ERR_SLUICE_NO_CLIENT_ADDRESS', this.#texts.noAddress!)
    }
  }
}
