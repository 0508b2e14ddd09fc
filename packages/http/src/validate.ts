import { describe } from '@sluice/core/validation'

/**
 * The `validate` option of an adapter's middleware: which one-time configuration checks
 * run (all by default). `false` turns them all off; an object turns single ones off.
 *
 * @example
 * ```ts
 * const quiet: ValidateOption<'xForwardedFor' | 'trustProxy'> = { xForwardedFor: false }
 * ```
 */
export type ValidateOption<Check extends string = string> =
  | boolean
  | { readonly [K in Check]?: boolean }

/**
 * The `validate` option of an adapter on a proxy-aware framework (Express `trust proxy`,
 * Koa `app.proxy`, Fastify `trustProxy`): `xForwardedFor` (warn when `X-Forwarded-For`
 * arrives while proxies are not trusted), `trustProxy` (warn when every hop is trusted),
 * `proxyHeader` (warn when proxies are trusted but the first 100 requests carried no proxy
 * header: with no proxy in front, any client can send one and pick its key).
 *
 * @example
 * ```ts
 * rateLimit({ limit: 100, validate: { xForwardedFor: false } })
 * ```
 */
export type ProxyValidateOption = ValidateOption<'xForwardedFor' | 'trustProxy' | 'proxyHeader'>

/** The stable codes of the warnings {@link ProxyValidateOption} switches. */
export type ProxyWarningCode =
  | 'ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'
  | 'ERR_SLUICE_PERMISSIVE_TRUST_PROXY'
  | 'ERR_SLUICE_TRUST_PROXY_WITHOUT_PROXY'

/**
 * Resolves a `validate` option into the set of checks to run. A check is deleted from the
 * set once it has been looked at, so each suspicious setup is reported at most once.
 *
 * @example
 * ```ts
 * const pending = enabledChecks('rateLimit', options.validate, ['xForwardedFor', 'trustProxy'])
 * if (pending.delete('trustProxy') && proxyIsPermissive) emitWarning('rateLimit', code, text)
 * ```
 */
export function enabledChecks<Check extends string>(
  factory: string,
  option: unknown,
  checks: readonly Check[],
): Set<Check> {
  if (option === undefined || option === true) return new Set(checks)
  if (option === false) return new Set()
  if (typeof option !== 'object' || option === null || Array.isArray(option)) {
    throw new TypeError(
      `${factory}: "validate" must be a boolean or an object, got ${describe(option)}`,
    )
  }
  const switches = option as Record<string, unknown>
  for (const [name, value] of Object.entries(switches)) {
    if (!(checks as readonly string[]).includes(name)) {
      throw new TypeError(
        `${factory}: unknown check "validate.${name}" (known: ${checks.join(', ')})`,
      )
    }
    if (value !== undefined && typeof value !== 'boolean') {
      throw new TypeError(
        `${factory}: "validate.${name}" must be a boolean, got ${describe(value)}`,
      )
    }
  }
  // Own switches only: a polluted Object.prototype must not turn a check off.
  return new Set(
    checks.filter((check) => !Object.hasOwn(switches, check) || switches[check] !== false),
  )
}
