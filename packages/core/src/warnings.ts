interface WarningProcess {
  emitWarning(message: string, options: { type: string; code: string }): void
}

/** Where each warning's help page lives: `docs/warnings/<CODE>.md` in the repository. */
const HELP = 'https://github.com/sluice-js/sluice/blob/main/docs/warnings/'

/** Warnings already given, so a setup repeated in a loop is reported once, not per copy. */
const given = new Set<string>()

/**
 * Reports a legal but suspicious setup, or a failure that has no request left to fail, as
 * a `SluiceWarning` with a stable `code` and a link to its help page. It logs rather than
 * throws: a misconfigured proxy must not take the service down. The same warning is given
 * once per process, whichever package meets it (a core factory, the keyed limiter or a
 * middleware: they share this one list). Uses `process.emitWarning` where there is one
 * (Node, Bun, Deno), so `--no-warnings` and `process.on('warning')` apply, and
 * `console.warn` elsewhere (a Cloudflare Worker without `nodejs_compat`, a browser): core
 * depends on no runtime.
 *
 * @example
 * ```ts
 * emitWarning('rateLimit', 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY', 'X-Forwarded-For arrived ...')
 * ```
 */
export function emitWarning(
  factory: string,
  code: string,
  message: string,
  /** Give it every time (a store's outages and recoveries), not once per process. */
  every = false,
): void {
  const text = `${factory}: ${message} (see ${HELP}${code}.md)`
  // Keyed without the factory: a proxy warning is about the app, not about which of its
  // middlewares (rateLimit, bulkhead) saw the request first.
  const key = `${code}\u0000${message}`
  if (!every) {
    if (given.has(key)) return
    given.add(key)
  }
  const host = (globalThis as { process?: Partial<WarningProcess> }).process
  if (typeof host?.emitWarning === 'function') {
    host.emitWarning(text, { type: 'SluiceWarning', code })
  } else {
    console.warn(`SluiceWarning [${code}]: ${text}`)
  }
}

/**
 * Warns once when a duration option is a bare number under 1000. Bare numbers are
 * milliseconds where rate-limiter-flexible's `duration` and `blockDuration` count seconds,
 * so `block: { for: 60 }` is far more often a minute meant than 60 ms. A window gets
 * `ERR_SLUICE_WINDOW_IN_MS`, any other duration `ERR_SLUICE_DURATION_IN_MS`; zero (no wait
 * at all) and strings are left alone. Call it where the option is read.
 *
 * @param option How the option is named in the message, e.g. `block.for` or `policies[1].window`.
 * @example
 * ```ts
 * warnIfBareMilliseconds('bulkhead', 'queueTimeout', 5) // SluiceWarning ERR_SLUICE_DURATION_IN_MS
 * warnIfBareMilliseconds('bulkhead', 'queueTimeout', '5s') // nothing
 * ```
 */
export function warnIfBareMilliseconds(factory: string, option: string, value: unknown): void {
  if (typeof value !== 'number' || !(value > 0 && value < 1000)) return
  const message = `"${option}" is ${value}, which is ${value} milliseconds, not seconds. Write '${value}s' if you meant seconds, or '${value}ms' to silence this.`
  if (/(?:^|\.)window$/.test(option)) emitWarning(factory, 'ERR_SLUICE_WINDOW_IN_MS', message)
  else emitWarning(factory, 'ERR_SLUICE_DURATION_IN_MS', message)
}

/**
 * Forgets which warnings were given, so a test can expect one again. Not for production
 * code: there each warning is meant to be given once per process.
 *
 * @example
 * ```ts
 * beforeEach(() => forgetWarnings())
 * ```
 */
export function forgetWarnings(): void {
  given.clear()
}
