/**
 * The floor every keyed limiter is compared with: GCRA written inline on a
 * `Map<string, number>` of theoretical arrival times, with one `performance.now()` read
 * per decision and nothing else — no validation, no options, no object per key. A
 * limiter cannot decide with less work than this, so `× floor` is its overhead.
 *
 * @example
 * ```ts
 * const decide = inlineGcra(100, 1000)
 * decide('10.0.0.1') // true
 * ```
 */
export function inlineGcra(limit: number, windowMs: number): (key: string) => boolean {
  const interval = windowMs / limit
  const tolerance = limit * interval
  const tats = new Map<string, number>()
  return function gcraFloor(key: string): boolean {
    const now = performance.now()
    const tat = tats.get(key)
    const next = (tat === undefined || tat < now ? now : tat) + interval
    if (next - now > tolerance) return false
    tats.set(key, next)
    return true
  }
}

/**
 * The same GCRA on one object field instead of a Map: what a single limiter object could
 * cost at best (V8 keeps a double field unboxed, where a Map value or a closure variable
 * holding a fraction is a fresh heap number on every write). Shown beside the hot key's
 * results, not used for the targets.
 *
 * @example
 * ```ts
 * const decide = inlineGcraScalar(100, 1000)
 * decide() // true
 * ```
 */
export function inlineGcraScalar(limit: number, windowMs: number): () => boolean {
  const interval = windowMs / limit
  const tolerance = limit * interval
  const state = { tat: Number.NEGATIVE_INFINITY }
  return function gcraScalarFloor(): boolean {
    const now = performance.now()
    const tat = state.tat
    const next = Math.max(tat, now) + interval
    if (next - now > tolerance) return false
    state.tat = next
    return true
  }
}
