import { describe } from '../validation'

/**
 * A number option: `fallback` when undefined, else a number `accept` allows. The message
 * names the factory, the option, the rule and the value received.
 */
export function readNumber(
  factory: string,
  option: string,
  value: unknown,
  fallback: number,
  accept: (n: number) => boolean,
  rule: string,
): number {
  if (value === undefined) return fallback
  const message = `${factory}: "${option}" must be ${rule}, got ${describe(value)}`
  if (typeof value !== 'number') throw new TypeError(message)
  if (Number.isNaN(value) || !accept(value)) throw new RangeError(message)
  return value
}
