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
 * Resolves a `validate` option into the set of checks to run. An adapter deletes a check
 * from the set once it has looked at it, so each suspicious setup is reported at most once
 * and a quiet middleware pays for one `size` test per request.
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
  return new Set(checks.filter((check) => switches[check] !== false))
}
