// The shape of every validation message, in a module of its own: the clock and the
// duration parser use it, and validation.ts uses them.

/**
 * Renders a received value for an error message: strings quoted, numbers as written,
 * objects by kind, so `got "1 s"` and `got 1` are never confused.
 *
 * @example
 * ```ts
 * describe('100') // '"100"'
 * describe(null) // 'null'
 * ```
 */
export function describe(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.length > 64 ? `${value.slice(0, 61)}...` : value)
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value)
    case 'bigint':
      return `${value}n`
    case 'symbol':
      return value.toString()
    case 'function':
      return 'a function'
    default:
      if (value === null) return 'null'
      return Array.isArray(value) ? 'an array' : 'an object'
  }
}

/**
 * A TypeError (wrong kind of value) in the shared message shape.
 *
 * @example
 * ```ts
 * throw typeError('rateLimit', 'limit', 'must be a positive integer', '100')
 * // TypeError: rateLimit: "limit" must be a positive integer, got "100"
 * ```
 */
export function typeError(
  factory: string,
  option: string,
  rule: string,
  value: unknown,
): TypeError {
  return new TypeError(`${factory}: "${option}" ${rule}, got ${describe(value)}`)
}

/**
 * A RangeError (right kind, value out of range) in the shared message shape.
 *
 * @example
 * ```ts
 * throw rangeError('rateLimit', 'limit', 'must be a positive integer', 0)
 * ```
 */
export function rangeError(
  factory: string,
  option: string,
  rule: string,
  value: unknown,
): RangeError {
  return new RangeError(`${factory}: "${option}" ${rule}, got ${describe(value)}`)
}
