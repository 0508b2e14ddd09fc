import { emitWarning, enabledChecks, type ValidateOption as Switches } from '@sluice/http/adapter'
import type { Context } from 'hono'
import { onWorkers, rawHeader } from './client-address'

/** Stable codes of the one-time configuration warnings. */
export type ValidationCode = 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY' | 'ERR_SLUICE_NO_CLIENT_ADDRESS'

/**
 * Which one-time checks run on the first requests (all by default; none apply once a
 * `getIp` is given). `false` turns them all off; an object turns single ones off.
 *
 * @example
 * ```ts
 * rateLimit({ limit: 100, validate: { xForwardedFor: false } })
 * ```
 */
export type ValidateOption = Switches<'xForwardedFor' | 'clientAddress'>

/**
 * Legal but suspicious client-address setups of the default `getIp`, each reported once
 * as a `SluiceWarning` with a stable code, never thrown.
 */
export class Validations {
  readonly #pending: Set<'xForwardedFor' | 'clientAddress'>
  readonly #factory: string

  constructor(factory: string, option: ValidateOption | undefined, defaultIp: boolean) {
    this.#factory = factory
    this.#pending = enabledChecks(factory, option, ['xForwardedFor', 'clientAddress'])
    // A supplied getIp is the user's decision about proxies and runtimes.
    if (!defaultIp) this.#pending.clear()
  }

  /** Runs the per-request checks still pending. */
  check(c: Context): void {
    if (!this.#pending.has('xForwardedFor') || rawHeader(c, 'x-forwarded-for') === undefined) {
      return
    }
    this.#pending.delete('xForwardedFor')
    // On Workers the default address is Cloudflare's own cf-connecting-ip, which already
    // accounts for its proxy (the edge adds X-Forwarded-For too).
    if (onWorkers()) return
    emitWarning(
      this.#factory,
      'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY',
      "An X-Forwarded-For header arrived, but the client address is read from the socket (the default getIp): if the app runs behind a proxy, every client shares the proxy's address and one rate-limit key. Pass `getIp` reading the address your proxy sets (e.g. the last X-Forwarded-For entry).",
    )
  }

  /** Reports, once, that the default `getIp` found no address. */
  noAddress(): void {
    if (!this.#pending.delete('clientAddress')) return
    emitWarning(
      this.#factory,
      'ERR_SLUICE_NO_CLIENT_ADDRESS',
      'No client address: the runtime reported none (the request was not served by @hono/node-server, Bun.serve, Deno.serve or Cloudflare Workers; app.request() in a test has no connection) and no `getIp` was given, so every client shares one rate-limit key. Pass `getIp` reading the address where your runtime or proxy puts it.',
    )
  }
}
