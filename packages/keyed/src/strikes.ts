import type { Penalty } from './store'

/** A key's refusals counted towards a penalty, and the end of its block (0: none). */
export interface StrikeCount {
  count: number
  since: number
  until: number
}

/**
 * Counts one refusal into `strikes`, in place: the `after`th refusal within one window
 * of the first starts a block of `forMs`, and the count starts again. The rule of every
 * store that keeps its penalties in process (memory, Durable Objects, Deno KV).
 */
export function countStrike(
  strikes: StrikeCount,
  block: Penalty,
  windowMs: number,
  now: number,
): void {
  if (now - strikes.since >= windowMs) {
    strikes.count = 0
    strikes.since = now
    strikes.until = 0
  }
  strikes.count++
  if (strikes.count >= block.after) {
    strikes.count = 0
    strikes.since = now
    strikes.until = now + block.forMs
  }
}
