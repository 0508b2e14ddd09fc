/**
 * A seeded pseudo-random source in [0, 1) (mulberry32): the simulation must give the
 * same numbers on every machine and every run, which `Math.random` cannot.
 *
 * @example
 * ```ts
 * const next = seededRandom(7)
 * next() === seededRandom(7)() // true
 * ```
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/**
 * An exponentially distributed value with the given mean, by inversion.
 *
 * @example
 * ```ts
 * exponential(seededRandom(1), 10) // a service time averaging 10 ms
 * ```
 */
export function exponential(random: () => number, mean: number): number {
  return -mean * Math.log(1 - random())
}
