import type { Carry } from './types'
import { describe, suggest, typeError } from './validation'

/**
 * Every {@link Carry} mode, in the order messages list them.
 *
 * @example
 * ```ts
 * CARRY_MODES.includes(config.carry) // validate a mode read from a config file
 * ```
 */
export const CARRY_MODES: readonly Carry[] = ['proportional', 'as-is', 'reset', 'additive']

/**
 * The `carry` of a reconfiguration (default `'proportional'`), or a TypeError naming the
 * method, the choices and the closest one.
 *
 * @example
 * ```ts
 * readCarry('tokenBucket.reconfigure', 'as-is') // 'as-is'
 * ```
 */
export function readCarry(method: string, options: unknown): Carry {
  if (options === undefined) return 'proportional'
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${method}: options must be an object, got ${describe(options)}`)
  }
  for (const name of Object.keys(options)) {
    if (name !== 'carry') {
      const hint = suggest(name, ['carry']) === undefined ? '' : ' (did you mean "carry"?)'
      throw new TypeError(`${method}: unknown option "${name}"${hint}`)
    }
  }
  const { carry } = options as { carry?: unknown }
  if (carry === undefined) return 'proportional'
  if (typeof carry === 'string' && CARRY_MODES.includes(carry as Carry)) return carry as Carry
  const closest = typeof carry === 'string' ? suggest(carry, CARRY_MODES) : undefined
  const list = CARRY_MODES.map((mode) => `'${mode}'`).join(', ')
  const hint = closest === undefined ? '' : ` (did you mean '${closest}'?)`
  throw typeError(method, 'carry', `must be one of ${list}${hint}`, carry)
}

/**
 * `floor(a / b)` for BigInts of any sign, `b > 0` (BigInt division truncates toward zero).
 *
 * @example
 * ```ts
 * floorDiv(-7n, 2n) // -4n
 * ```
 */
export function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b
  return a % b < 0n ? q - 1n : q
}

/**
 * `ceil(a / b)` for BigInts of any sign, `b > 0`.
 *
 * @example
 * ```ts
 * ceilDiv(7n, 2n) // 4n
 * ```
 */
export function ceilDiv(a: bigint, b: bigint): bigint {
  return -floorDiv(-a, b)
}
