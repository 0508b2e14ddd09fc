/** What a decision leaves to report, filled in by `decide` and `quota`. */
export interface Quota {
  /** `availablePermits()` after the decision. */
  available: number
  /** Milliseconds until one more permit than `available` passes; 0 when none can be freed. */
  resetMs: number
  /** For a refusal, milliseconds until the permits asked for would pass (`Infinity`: never). */
  retryAfterMs: number
  /** The receipt of the permits taken (meaningful after an admission). */
  receipt: number
}
