/**
 * Renders a received value for an error message: strings quoted, numbers as written,
 * objects by kind, so `got "1 s"` and `got 1` are never confused.
 */
export function describe(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
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
