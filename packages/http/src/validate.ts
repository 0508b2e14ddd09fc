/**
 * Renders a received value for an error message: strings quoted, objects by kind, so a
 * message reads `rateLimit: "limit" must be a positive integer, got "100"`.
 */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'function') return 'a function'
  if (Array.isArray(value)) return 'an array'
  if (value === null) return 'null'
  if (typeof value === 'object') return 'an object'
  return String(value)
}

/** Throws a TypeError naming the factory, the option, the rule and the value received. */
export function typeError(
  factory: string,
  option: string,
  rule: string,
  value: unknown,
): TypeError {
  return new TypeError(`${factory}: "${option}" ${rule}, got ${describe(value)}`)
}

/** A RangeError with the same message shape as `typeError`. */
export function rangeError(
  factory: string,
  option: string,
  rule: string,
  value: unknown,
): RangeError {
  return new RangeError(`${factory}: "${option}" ${rule}, got ${describe(value)}`)
}

/** `value` as a positive integer, or a TypeError/RangeError naming the option. */
export function positiveInteger(factory: string, option: string, value: unknown): number {
  if (typeof value !== 'number')
    throw typeError(factory, option, 'must be a positive integer', value)
  if (!Number.isInteger(value) || value < 1) {
    throw rangeError(factory, option, 'must be a positive integer', value)
  }
  return value
}

/** `value` as a non-negative integer, or a TypeError/RangeError naming the option. */
export function nonNegativeInteger(factory: string, option: string, value: unknown): number {
  if (typeof value !== 'number') {
    throw typeError(factory, option, 'must be a non-negative integer', value)
  }
  if (!Number.isInteger(value) || value < 0) {
    throw rangeError(factory, option, 'must be a non-negative integer', value)
  }
  return value
}

/** Checks that `value` is a function when present. */
export function optionalFunction<F>(
  factory: string,
  option: string,
  value: F | undefined,
): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw typeError(factory, option, 'must be a function', value)
  }
  return value
}

/** Checks that `value` is a plain options object (or absent). */
export function optionsObject(factory: string, value: unknown): void {
  if (
    value !== undefined &&
    (typeof value !== 'object' || value === null || Array.isArray(value))
  ) {
    throw new TypeError(`${factory}: options must be an object, got ${describe(value)}`)
  }
}

/**
 * An HTTP status code in the given class range (e.g. 400–599 for refusals), or a RangeError.
 */
export function statusCode(factory: string, option: string, value: unknown): number {
  if (typeof value !== 'number') {
    throw typeError(factory, option, 'must be an HTTP status code from 400 to 599', value)
  }
  if (!Number.isInteger(value) || value < 400 || value > 599) {
    throw rangeError(factory, option, 'must be an HTTP status code from 400 to 599', value)
  }
  return value
}
