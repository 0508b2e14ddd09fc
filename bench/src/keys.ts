/**
 * `count` distinct IPv4-looking client keys in a fixed pseudo-random order, the same in
 * every process: walking the array visits a Map's entries in no particular memory order,
 * as real clients would, without paying for a random number generator per decision.
 *
 * @example
 * ```ts
 * makeKeys(3) // e.g. ['10.0.0.2', '10.0.0.0', '10.0.0.1']
 * ```
 */
export function makeKeys(count: number): string[] {
  const keys = new Array<string>(count)
  for (let i = 0; i < count; i++) {
    keys[i] = `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`
  }
  // Fisher–Yates with xorshift32, seeded: deterministic, so every contender sees one order.
  let state = 0x9e3779b9
  for (let i = count - 1; i > 0; i--) {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    const j = (state >>> 0) % (i + 1)
    const swap = keys[i]!
    keys[i] = keys[j]!
    keys[j] = swap
  }
  return keys
}
