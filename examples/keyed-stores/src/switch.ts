/**
 * Whether the Redis variants of the examples' tests run: only with
 * `SLUICE_REDIS_EXAMPLES=1` while `redisStore` does not implement the whole Store protocol
 * (`force` and `block`) that `keyedLimiter` needs. Its own module, importing nothing, so
 * the global setup can read it.
 */
export function redisExamplesEnabled(): boolean {
  return process.env.SLUICE_REDIS_EXAMPLES === '1'
}
